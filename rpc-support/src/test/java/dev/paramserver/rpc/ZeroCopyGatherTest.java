package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import io.grpc.internal.CompositeReadableBuffer;
import io.grpc.internal.ReadableBuffers;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link ZeroCopyMarshaller} on messages that arrive in several transport buffers (16 KiB, as
 * grpc-netty hands them over): gathered into a pooled array, parsed as views of it, and the array
 * reused only once the message holding it was released.
 */
class ZeroCopyGatherTest {
  private final List<Boolean> parses = new ArrayList<>();
  private final ZeroCopyMarshaller<PushGradientsRequest> marshaller =
      new ZeroCopyMarshaller<>(PushGradientsRequest.getDefaultInstance(), parses::add);

  @Test
  void messagesInSeveralBuffers_parseEqual_andKeepTheirBytesUntilReleased() {
    PushGradientsRequest a = push(1, 5000);
    PushGradientsRequest b = push(2, 7000);

    PushGradientsRequest parsedA = marshaller.parse(received(a.toByteArray()));
    // a second message while the first is held gets an array of its own
    PushGradientsRequest parsedB = marshaller.parse(received(b.toByteArray()));

    assertThat(parsedA).isEqualTo(a);
    assertThat(parsedB).isEqualTo(b);
    assertThat(parses).containsExactly(true, true);
    assertThat(marshaller.held()).isEqualTo(2);
    assertThat(marshaller.pooledArrays()).isZero();

    marshaller.release(parsedA);
    assertThat(parsedB).as("b untouched by a's release").isEqualTo(b);
    assertThat(marshaller.pooledArrays()).isEqualTo(1);
    marshaller.release(parsedA);
    assertThat(marshaller.pooledArrays()).as("a second release does nothing").isEqualTo(1);

    // the next message reuses a's array, and b still reads as it was
    PushGradientsRequest c = push(3, 4000);
    PushGradientsRequest parsedC = marshaller.parse(received(c.toByteArray()));
    assertThat(marshaller.pooledArrays()).isZero();
    assertThat(parsedC).isEqualTo(c);
    assertThat(parsedB).isEqualTo(b);
    marshaller.release(parsedB);
    marshaller.release(parsedC);
    assertThat(marshaller.held()).isZero();
    assertThat(marshaller.pooledArrays()).isEqualTo(2);
  }

  @Test
  void aMessageInOneBuffer_isParsedInPlace_withoutAnArray() {
    PushGradientsRequest small = push(4, 10);
    PushGradientsRequest parsed = marshaller.parse(received(small.toByteArray()));
    assertThat(parsed).isEqualTo(small);
    marshaller.release(parsed);
    assertThat(marshaller.pooledArrays()).isZero();
  }

  private static PushGradientsRequest push(long step, int rows) {
    Random random = new Random(step);
    SparseRows.Builder sparse = SparseRows.newBuilder().setName("emb").setDtype(DataType.FLOAT32);
    for (int r = 0; r < rows; r++) {
      sparse.addRowIds(random.nextLong(10_000_000L));
    }
    byte[] data = new byte[rows * 32];
    random.nextBytes(data);
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t")
        .setStep(step)
        .addSparseGradients(sparse.setData(ByteString.copyFrom(data)))
        .build();
  }

  /** {@code bytes} as a transport hands a received message over: 16 KiB buffers. */
  private static InputStream received(byte[] bytes) {
    CompositeReadableBuffer all = new CompositeReadableBuffer();
    for (int at = 0; at < bytes.length; at += 16 << 10) {
      all.addBuffer(
          ReadableBuffers.wrap(ByteBuffer.wrap(bytes, at, Math.min(16 << 10, bytes.length - at))));
    }
    return ReadableBuffers.openStream(all, true);
  }
}
