package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.UnsafeByteOperations;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.SparseRows;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link LendingMarshaller}: an answer whose bytes are views of lent arrays is written whole, and
 * its arrays go back exactly once, only after it was written (drained as grpc-netty does, or read
 * as an in-process transport does), never for an answer forgotten unsent.
 */
class LendingMarshallerTest {
  private final List<byte[]> givenBack = new ArrayList<>();
  private final LendingMarshaller<PushGradientsResponse> marshaller =
      new LendingMarshaller<>(PushGradientsResponse.getDefaultInstance(), givenBack::add);

  @Test
  void drainedAnswer_isWrittenWhole_thenItsArraysGoBackOnce() throws Exception {
    byte[] array = new byte[64];
    PushGradientsResponse answer = answer(array, 12);
    byte[] expected = answer.toByteArray();
    marshaller.lend(answer, List.of(array));
    assertThat(marshaller.lent()).isEqualTo(1);

    InputStream in = marshaller.stream(answer);
    assertThat(marshaller.lent()).isZero();
    assertThat(givenBack).isEmpty();
    assertThat(((KnownLength) in).available()).isEqualTo(expected.length);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertThat(((Drainable) in).drainTo(out)).isEqualTo(expected.length);
    in.close();

    assertThat(out.toByteArray()).isEqualTo(expected);
    assertThat(givenBack).containsExactly(array);
  }

  @Test
  void readAnswer_readsACopy_andParsesBackEqual() throws Exception {
    byte[] array = new byte[64];
    PushGradientsResponse answer = answer(array, 16);
    PushGradientsResponse expected = PushGradientsResponse.parseFrom(answer.toByteArray());
    marshaller.lend(answer, List.of(array));

    InputStream in = marshaller.stream(answer);
    PushGradientsResponse parsed = marshaller.parse(in);
    in.close();

    assertThat(parsed).isEqualTo(expected);
    assertThat(givenBack).containsExactly(array);
    // the array is the pool's again: scribbling on it leaves the parsed copy as it was
    Arrays.fill(array, (byte) 7);
    assertThat(parsed).isEqualTo(expected);
  }

  @Test
  void forgottenAnswer_givesNothingBack_andAnswersNotLentStreamTheStockWay() throws Exception {
    byte[] array = new byte[64];
    PushGradientsResponse answer = answer(array, 8);
    marshaller.lend(answer, List.of(array));
    marshaller.forget(answer);
    assertThat(marshaller.lent()).isZero();

    PushGradientsResponse parsed = marshaller.parse(marshaller.stream(answer));
    assertThat(parsed).isEqualTo(answer);
    assertThat(givenBack).isEmpty();

    marshaller.lend(PushGradientsResponse.getDefaultInstance(), List.of(array));
    marshaller.lend(answer, List.of());
    assertThat(marshaller.lent()).isZero();
  }

  @Test
  void closedUnreadStream_givesItsArraysBack() throws Exception {
    byte[] array = new byte[64];
    PushGradientsResponse answer = answer(array, 8);
    marshaller.lend(answer, List.of(array));
    InputStream in = marshaller.stream(answer);
    in.close();
    in.close();
    assertThat(givenBack).containsExactly(array);
    assertThat(in.read()).isEqualTo(-1);
  }

  private static PushGradientsResponse answer(byte[] array, int bytes) {
    for (int i = 0; i < bytes; i++) {
      array[i] = (byte) (i + 1);
    }
    return PushGradientsResponse.newBuilder()
        .setStep(3)
        .addSparseRows(
            SparseRows.newBuilder()
                .setName("emb")
                .setDtype(DataType.FLOAT32)
                .addRowIds(5)
                .setData(UnsafeByteOperations.unsafeWrap(array, 0, bytes)))
        .build();
  }
}
