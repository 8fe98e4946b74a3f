package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.core.env.StandardEnvironment;

/**
 * Answers with rows built in the shard's pooled arrays and given back once written: over a real
 * Netty transport (the answer drained into its buffer) and in process (the answer read as bytes by
 * the client), every answer of a run of pushes, unary and streamed, carries the rows a shard that
 * applied the same pushes answers to each one, although later answers reuse the arrays of earlier
 * ones; and no answer stays lent.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PooledAnswerTest {
  private static final int PUSHES = 40;
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
  void unaryAndStreamedAnswers_overNetty_carryEachPushsRows() throws Exception {
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
  void unaryAndStreamedAnswers_inProcess_carryEachPushsRows() throws Exception {
    ParameterShard shard = shard();
    ParameterServerGrpcService service = service(shard);
    String name = InProcessServerBuilder.generateName();
    Server server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(ServerInterceptors.intercept(service, new ErrorMappingInterceptor()))
            .build()
            .start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    closeLater(server, channel);
    checkAnswers(service, channel);
  }

  private void checkAnswers(ParameterServerGrpcService service, ManagedChannel channel)
      throws Exception {
    ParameterShard reference = shard();
    List<PushGradientsResponse> answers = new ArrayList<>();
    ParameterServerGrpc.ParameterServerBlockingStub blocking =
        ParameterServerGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS);
    for (int step = 1; step <= PUSHES / 2; step++) {
      answers.add(blocking.pushGradients(push(step)));
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    List<PushGradientsResponse> streamed = new ArrayList<>();
    StreamObserver<PushGradientsRequest> stream =
        ParameterServerGrpc.newStub(channel)
            .withDeadlineAfter(20, TimeUnit.SECONDS)
            .streamPushes(
                new StreamObserver<>() {
                  @Override
                  public void onNext(PushGradientsResponse value) {
                    synchronized (streamed) {
                      streamed.add(value);
                    }
                  }

                  @Override
                  public void onError(Throwable t) {
                    done.completeExceptionally(t);
                  }

                  @Override
                  public void onCompleted() {
                    done.complete(null);
                  }
                });
    for (int step = PUSHES / 2 + 1; step <= PUSHES; step++) {
      stream.onNext(push(step));
    }
    stream.onCompleted();
    done.get(20, TimeUnit.SECONDS);
    answers.addAll(streamed);

    assertThat(answers).hasSize(PUSHES);
    for (int step = 1; step <= PUSHES; step++) {
      PushGradientsRequest request = push(step);
      // the reference's rows are lent and never given back: they stay as read
      PushOutcome outcome = reference.pushOutcome(request);
      List<SparseRows> expected = outcome.rows();
      assertThat(answers.get(step - 1).getSparseRowsList())
          .as("answer %d", step)
          .isEqualTo(expected);
    }
    assertThat(service.lentAnswers()).isZero();
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
    shard.init(init("s", List.of(table("emb", 8), table("wide", 1)), List.of()));
    shard.finishInit(finish("s", 0));
    return shard;
  }

  private static ParameterSpec table(String name, int width) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(0)
        .addShape(width)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setOptimizer(sgd(0.5f))
        .build();
  }

  /** Push {@code step}: 300 ids of each table from a space of 500, so rows repeat across pushes. */
  private static PushGradientsRequest push(long step) {
    SplittableRandom r = new SplittableRandom(step);
    PushGradientsRequest.Builder b =
        PushGradientsRequest.newBuilder()
            .setTrainerId("t0")
            .setSession("s1")
            .setStep(step)
            .setReturnRows(true);
    for (String name : new String[] {"emb", "wide"}) {
      int width = name.equals("emb") ? 8 : 1;
      SparseRows.Builder rows = SparseRows.newBuilder().setName(name).setDtype(DataType.FLOAT32);
      float[] g = new float[300 * width];
      for (int i = 0; i < 300; i++) {
        rows.addRowIds(r.nextLong(500));
      }
      for (int i = 0; i < g.length; i++) {
        g[i] = (float) r.nextGaussian();
      }
      b.addSparseGradients(rows.setData(TensorCodec.encode(g)));
    }
    return b.build();
  }
}
