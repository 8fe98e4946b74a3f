package dev.paramserver.pserver.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Oversized messages (issue 26 item 5) over real loopback Netty, since the size limit is a
 * transport setting ({@code spring.grpc.server.inbound.message.max-size}, here 4 MiB instead of the
 * pserver's 64 MB to keep the test small): the transport refuses a push or an init past it with
 * RESOURCE_EXHAUSTED (no reason: it never reaches the service, docs/design.md §2), the shard is
 * unchanged, and the server serves the next call; a request just under the limit whose tensors lie
 * about their length is refused by the service with its reason.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OversizedMessageTest {
  private static final int LIMIT = 4 << 20;

  private final ParameterShard shard = new ParameterShard(true);
  private ExecutorService executor;
  private Server server;
  private ManagedChannel channel;
  private ParameterServerGrpc.ParameterServerBlockingStub stub;

  @BeforeEach
  void start() throws Exception {
    executor = Executors.newCachedThreadPool();
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .maxInboundMessageSize(LIMIT)
            .addService(TestServices.parameterServer(shard, executor))
            .build()
            .start();
    channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
            .usePlaintext()
            .maxInboundMessageSize(LIMIT)
            .build();
    stub = ParameterServerGrpc.newBlockingStub(channel);
    stub().initParameters(HostileCall.Mutation.INIT_VALID.initRequest());
    stub().finishInit(HostileRequests.finish(HostileRequests.INIT_ID, 2));
    stub().pushGradients(HostileRequests.push(1, 1));
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    executor.shutdownNow();
  }

  private ParameterServerGrpc.ParameterServerBlockingStub stub() {
    return stub.withDeadlineAfter(20, TimeUnit.SECONDS);
  }

  private ShardCheckpoint state() {
    return shard.snapshot().toBuilder().setCreatedMs(0).build();
  }

  private static ByteString bytes(int n) {
    return ByteString.copyFrom(new byte[n]);
  }

  @Test
  void pushAndInitPastTheTransportLimit_areResourceExhausted_andChangeNothing() {
    ShardCheckpoint before = state();
    PushGradientsRequest push =
        HostileRequests.push(2, 2).toBuilder()
            .addGradients(
                TensorBlock.newBuilder()
                    .setName(HostileRequests.DENSE)
                    .setBlock(0)
                    .setDtype(DataType.FLOAT32)
                    .setData(bytes(LIMIT + 16)))
            .build();
    Throwable t = catchThrowable(() -> stub().pushGradients(push));
    assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);

    InitParametersRequest init =
        HostileCall.Mutation.INIT_VALID.initRequest().toBuilder()
            .addSparseRows(
                SparseRows.newBuilder()
                    .setName(HostileRequests.SPARSE)
                    .setDtype(DataType.FLOAT32)
                    .setData(bytes(2 * LIMIT)))
            .build();
    t = catchThrowable(() -> stub().initParameters(init));
    assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);

    assertThat(state()).isEqualTo(before);
    assertThat(stub().pushGradients(HostileRequests.push(3, 3)).getStep()).isEqualTo(2);
  }

  @Test
  void pushJustUnderTheLimit_whoseBlockLiesAboutItsLength_isRefusedWithItsReason() {
    ShardCheckpoint before = state();
    PushGradientsRequest push =
        HostileRequests.push(2, 2).toBuilder()
            .addGradients(
                TensorBlock.newBuilder()
                    .setName(HostileRequests.DENSE)
                    .setBlock(2)
                    .setDtype(DataType.FLOAT32)
                    .setData(bytes(LIMIT - 4096)))
            .build();
    Throwable t = catchThrowable(() -> stub().pushGradients(push));
    PserverHostileInputFuzzTest.assertRefusedWithReason(t, "a push of 4 MiB to an 8-element block");
    assertThat(t).hasMessageContaining("parameter 'fc1.w' block 2 expects 8 float32 values");
    assertThat(state()).isEqualTo(before);
    assertThat(stub().pushGradients(HostileRequests.push(3, 3)).getStep()).isEqualTo(2);
  }
}
