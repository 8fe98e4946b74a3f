package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link ZeroCopyMarshaller} over a real Netty server and channel on 127.0.0.1: pushes of several
 * sizes (empty, one small block, one larger than an HTTP/2 frame, more than 1 MiB in blocks and
 * sparse rows) reach the server's handler aliasing the received buffers, and their answers, echoing
 * every block and row, reach the client through a zero-copy marshaller too; both sides release
 * every message they aliased.
 */
class ZeroCopyMarshallerNettyTest {
  private static final int MAX_MESSAGE = 16 << 20;

  private final List<Boolean> serverParses = new CopyOnWriteArrayList<>();
  private final List<Boolean> clientParses = new CopyOnWriteArrayList<>();
  private final ZeroCopyMarshaller<PushGradientsRequest> pushes =
      new ZeroCopyMarshaller<>(PushGradientsRequest.getDefaultInstance(), serverParses::add);
  private final ZeroCopyMarshaller<PushGradientsResponse> answers =
      new ZeroCopyMarshaller<>(PushGradientsResponse.getDefaultInstance(), clientParses::add);
  private Server server;
  private ManagedChannel channel;

  @BeforeEach
  void start() throws Exception {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .maxInboundMessageSize(MAX_MESSAGE)
            .addService(
                ZeroCopyServices.rebind(
                    new Echo().bindService(),
                    List.of(
                        new ZeroCopyServices.Rebinding(
                            ParameterServerGrpc.getPushGradientsMethod().getFullMethodName(),
                            pushes))))
            .build()
            .start();
    channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
            .usePlaintext()
            .maxInboundMessageSize(MAX_MESSAGE)
            .build();
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  /** Answers each push with its step, blocks and rows, copied before the push is released. */
  private final class Echo extends ParameterServerGrpc.ParameterServerImplBase {
    @Override
    public void pushGradients(
        PushGradientsRequest push, StreamObserver<PushGradientsResponse> out) {
      PushGradientsResponse answer;
      try {
        // the answer is serialized after this method returns: it must not alias the push
        answer =
            PushGradientsResponse.parseFrom(
                PushGradientsResponse.newBuilder()
                    .setStep(push.getStep())
                    .addAllBlocks(push.getGradientsList())
                    .addAllSparseRows(push.getSparseGradientsList())
                    .build()
                    .toByteArray());
      } catch (InvalidProtocolBufferException e) {
        out.onError(Status.INTERNAL.withCause(e).asRuntimeException());
        return;
      } finally {
        pushes.release(push);
      }
      out.onNext(answer);
      out.onCompleted();
    }
  }

  @ParameterizedTest(name = "{0} bytes of gradients")
  @ValueSource(ints = {0, 64, 65_536, 3 << 20})
  void pushesAndAnswers_roundTripOverNetty_aliasingTheReceivedBuffers_andReleaseThem(int bytes) {
    PushGradientsRequest push = push(bytes);
    MethodDescriptor<PushGradientsRequest, PushGradientsResponse> method =
        ParameterServerGrpc.getPushGradientsMethod().toBuilder()
            .setResponseMarshaller(answers)
            .build();

    PushGradientsResponse answer =
        ClientCalls.blockingUnaryCall(
            channel, method, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), push);

    assertThat(answer.getStep()).isEqualTo(push.getStep());
    assertThat(answer.getBlocksList()).isEqualTo(push.getGradientsList());
    assertThat(answer.getSparseRowsList()).isEqualTo(push.getSparseGradientsList());
    assertThat(serverParses).as("the server's parses (true: aliased)").containsExactly(true);
    assertThat(clientParses).as("the client's parses (true: aliased)").containsExactly(true);
    assertThat(pushes.held()).as("pushes the server still holds").isZero();
    assertThat(answers.held())
        .as("answers the client holds until it releases")
        .isLessThanOrEqualTo(1);
    answers.release(answer);
    assertThat(answers.held()).as("answers the client holds after release").isZero();
  }

  /** A push carrying {@code bytes} bytes of gradients: half dense blocks, half sparse rows. */
  private static PushGradientsRequest push(int bytes) {
    PushGradientsRequest.Builder push =
        PushGradientsRequest.newBuilder().setTrainerId("t-" + bytes).setStep(bytes + 1L);
    if (bytes == 0) {
      return push.build();
    }
    Random random = new Random(bytes);
    int dense = bytes / 2 / 4 * 4;
    int perBlock = Math.max(4, Math.min(dense, 1 << 20));
    for (int offset = 0, block = 0; offset < dense; offset += perBlock, block++) {
      push.addGradients(
          TensorBlock.newBuilder()
              .setName("fc1.w")
              .setBlock(block)
              .setOffset(offset / 4)
              .setDtype(DataType.FLOAT32)
              .setData(randomBytes(random, Math.min(perBlock, dense - offset))));
    }
    int rows = Math.max(1, (bytes - dense) / 64);
    SparseRows.Builder sparse = SparseRows.newBuilder().setName("emb").setDtype(DataType.FLOAT32);
    for (int r = 0; r < rows; r++) {
      sparse.addRowIds(r * 7L);
    }
    return push.addSparseGradients(sparse.setData(randomBytes(random, rows * 64))).build();
  }

  private static ByteString randomBytes(Random random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return ByteString.copyFrom(b);
  }
}
