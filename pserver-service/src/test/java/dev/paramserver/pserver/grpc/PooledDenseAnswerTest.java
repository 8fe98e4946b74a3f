package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.core.env.StandardEnvironment;

/**
 * Dense blocks of pull answers and of pushes' {@code return_values} encoded into the shard's pooled
 * arrays and given back once written: a plain protobuf client (the generated stub) gets, over a
 * real Netty transport and in process, bit for bit the values of a shard that applied the same
 * pushes, although several pulls are in flight at once and later answers reuse the arrays of
 * earlier ones; and no answer stays lent.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PooledDenseAnswerTest {
  // two pooled blocks of 128 KiB and a small one encoded the ordinary way
  private static final int BLOCK = 32 << 10;
  private static final int ELEMENTS = 2 * BLOCK + 1000;
  private static final int BLOCKS = 3;
  private static final int STEPS = 12;
  private static final int PULLS_IN_FLIGHT = 6;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
    executor.shutdownNow();
  }

  @Test
  void pullsAndReturnedValues_overNetty_areBitIdenticalToTheShards() throws Exception {
    ParameterShard shard = shard();
    ParameterServerGrpcService service = service(shard);
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .directExecutor()
            .addService(ServerInterceptors.intercept(service, new ErrorMappingInterceptor()))
            .build()
            .start();
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    closeLater(server, channel);
    checkAnswers(service, channel);
  }

  @Test
  void pullsAndReturnedValues_inProcess_areBitIdenticalToTheShards() throws Exception {
    ParameterShard shard = shard();
    ParameterServerGrpcService service = service(shard);
    String name = InProcessServerBuilder.generateName();
    Server server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(ServerInterceptors.intercept(service, new ErrorMappingInterceptor()))
            .build()
            .start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
    closeLater(server, channel);
    checkAnswers(service, channel);
  }

  private void checkAnswers(ParameterServerGrpcService service, ManagedChannel channel)
      throws Exception {
    ParameterShard reference = shard();
    ParameterServerGrpc.ParameterServerBlockingStub blocking =
        ParameterServerGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS);
    ParameterServerGrpc.ParameterServerFutureStub async =
        ParameterServerGrpc.newFutureStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS);
    for (int step = 1; step <= STEPS; step++) {
      PushGradientsResponse pushed = blocking.pushGradients(push(step));
      reference.push(push(step));
      PullParametersResponse expected = reference.pull(PullParametersRequest.getDefaultInstance());
      assertThat(values(pushed.getBlocksList()))
          .as("values returned by push %d", step)
          .isEqualTo(values(expected.getBlocksList()));
      List<ListenableFuture<PullParametersResponse>> pulls = new ArrayList<>();
      for (int i = 0; i < PULLS_IN_FLIGHT; i++) {
        pulls.add(async.pullParameters(PullParametersRequest.getDefaultInstance()));
      }
      for (ListenableFuture<PullParametersResponse> f : pulls) {
        assertThat(values(f.get(20, TimeUnit.SECONDS).getBlocksList()))
            .as("pull after push %d", step)
            .isEqualTo(values(expected.getBlocksList()));
      }
    }
    // the server ends a loan once its send call returned: maybe after the client got the answer
    Poll.until(Duration.ofSeconds(10), () -> service.lentAnswers() == 0, "no answer stays lent");
  }

  /** Each block's raw wire bytes (bit-exact: NaN payloads and signed zeros compared too). */
  private static List<String> values(List<TensorBlock> blocks) {
    List<String> out = new ArrayList<>();
    for (TensorBlock b : blocks) {
      out.add(b.getName() + "#" + b.getBlock() + "@" + b.getOffset() + " " + b.getDtype());
      out.add(HexFormat.of().formatHex(b.getData().toByteArray()));
    }
    return out;
  }

  private ParameterServerGrpcService service(ParameterShard shard) {
    return new ParameterServerGrpcService(
        shard,
        Lifecycles.serving(shard, 0),
        executor,
        new SimpleMeterRegistry(),
        new ShardTraffic(),
        new AdminAddress("127.0.0.1", new StandardEnvironment()));
  }

  private void closeLater(Server server, ManagedChannel channel) {
    open.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    open.add(() -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
  }

  private static ParameterShard shard() {
    ParameterShard shard = new ParameterShard(true);
    List<TensorBlock> blocks = new ArrayList<>();
    for (int b = 0; b < BLOCKS; b++) {
      float[] v = new float[Math.min(BLOCK, ELEMENTS - b * BLOCK)];
      for (int i = 0; i < v.length; i++) {
        v[i] = (b * BLOCK + i) * 1e-4f;
      }
      blocks.add(
          TensorBlock.newBuilder()
              .setName("w")
              .setBlock(b)
              .setOffset((long) b * BLOCK)
              .setDtype(DataType.FLOAT32)
              .setData(TensorCodec.encode(v))
              .build());
    }
    shard.init(init("s", List.of(dense("w", ELEMENTS, BLOCK, sgd(0.5f))), blocks));
    shard.finishInit(finish("s", BLOCKS));
    return shard;
  }

  /** Push {@code step}: a random gradient for every block, asking for the values after it. */
  private static PushGradientsRequest push(long step) {
    SplittableRandom r = new SplittableRandom(step);
    PushGradientsRequest.Builder b =
        PushGradientsRequest.newBuilder()
            .setTrainerId("t0")
            .setSession("s1")
            .setStep(step)
            .setReturnValues(true);
    for (int block = 0; block < BLOCKS; block++) {
      float[] g = new float[Math.min(BLOCK, ELEMENTS - block * BLOCK)];
      for (int i = 0; i < g.length; i++) {
        g[i] = (float) r.nextGaussian();
      }
      b.addGradients(
          TensorBlock.newBuilder()
              .setName("w")
              .setBlock(block)
              .setDtype(DataType.FLOAT32)
              .setData(TensorCodec.encode(g)));
    }
    return b.build();
  }
}
