package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pullAll;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.buffer.PooledByteBufAllocator;
import io.grpc.netty.shaded.io.netty.buffer.UnpooledByteBufAllocator;
import io.grpc.netty.shaded.io.netty.util.ResourceLeakDetector;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;
import org.springframework.core.env.StandardEnvironment;

/**
 * The push paths over a real Netty server on loopback with zero-copy parsing: every received buffer
 * is released (Netty's leak detector at paranoid reports none), on accepted, refused and cancelled
 * pushes, and the shard ends bit for bit where the stock parser takes it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ZeroCopyPushTest {
  // large enough that a request arrives in several network buffers
  private static final int ELEMENTS = 96 * 1024;
  private static final int BLOCK = 32 * 1024;
  private static final String LEAK_LOGGER = ResourceLeakDetector.class.getName();

  private static ResourceLeakDetector.Level previousLevel;
  private static final ListAppender<ILoggingEvent> leaks = new ListAppender<>();

  private final List<Running> running = new ArrayList<>();

  @BeforeAll
  static void paranoid() {
    previousLevel = ResourceLeakDetector.getLevel();
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
    leaks.start();
    ((Logger) LoggerFactory.getLogger(LEAK_LOGGER)).addAppender(leaks);
  }

  @AfterAll
  static void restore() {
    ((Logger) LoggerFactory.getLogger(LEAK_LOGGER)).detachAppender(leaks);
    ResourceLeakDetector.setLevel(previousLevel);
  }

  @AfterEach
  void stop() throws Exception {
    for (Running r : running) {
      r.close();
    }
  }

  /** One pserver on a real Netty server and a channel to it. */
  private final class Running implements AutoCloseable {
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final ExecutorService executor = Executors.newCachedThreadPool();
    final ParameterServerGrpcService service;
    final Server server;
    final ManagedChannel channel;

    Running(boolean zeroCopy) throws Exception {
      ParameterShard shard = new ParameterShard(true);
      service =
          new ParameterServerGrpcService(
              shard,
              Lifecycles.serving(shard, 0),
              executor,
              registry,
              new ShardTraffic(),
              new AdminAddress("127.0.0.1", new StandardEnvironment()),
              zeroCopy);
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
              .addService(ServerInterceptors.intercept(service, new ErrorMappingInterceptor()))
              .maxInboundMessageSize(64 << 20)
              .build()
              .start();
      channel =
          NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
              .usePlaintext()
              .maxInboundMessageSize(64 << 20)
              .build();
      running.add(this);
    }

    ParameterServerGrpc.ParameterServerBlockingStub stub() {
      return ParameterServerGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS);
    }

    double parses(String name) {
      return registry.get(name).counters().stream().mapToDouble(c -> c.count()).sum();
    }

    @Override
    public void close() throws Exception {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      executor.shutdownNow();
    }
  }

  private static OptimizerConfig adam() {
    return OptimizerConfig.newBuilder()
        .setKind(OptimizerConfig.Kind.ADAM)
        .setLearningRate(0.01f)
        .setBeta1(0.9f)
        .setBeta2(0.999f)
        .setEpsilon(1e-8f)
        .build();
  }

  private static float[] random(Random rnd, int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) rnd.nextGaussian();
    }
    return v;
  }

  private static TensorBlock tensor(int block, float[] values, boolean withOffset) {
    TensorBlock.Builder b =
        TensorBlock.newBuilder()
            .setName("w")
            .setBlock(block)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(values));
    if (withOffset) {
      b.setOffset((long) block * BLOCK);
    }
    return b.build();
  }

  private static void initialise(Running r, OptimizerConfig optimizer, long seed) {
    Random rnd = new Random(seed);
    ParameterSpec spec = dense("w", ELEMENTS, BLOCK, optimizer);
    List<TensorBlock> blocks = new ArrayList<>();
    for (int b = 0; b < ELEMENTS / BLOCK; b++) {
      blocks.add(tensor(b, random(rnd, BLOCK), true));
    }
    assertThat(r.stub().initParameters(init("i1", List.of(spec), blocks)).getBlocks())
        .isEqualTo(ELEMENTS / BLOCK);
    r.stub().finishInit(finish("i1", ELEMENTS / BLOCK));
  }

  private static PushGradientsRequest gradients(Random rnd) {
    List<TensorBlock> g = new ArrayList<>();
    for (int b = 0; b < ELEMENTS / BLOCK; b++) {
      g.add(tensor(b, random(rnd, BLOCK), false));
    }
    return push(g.toArray(TensorBlock[]::new));
  }

  /** The answers of one StreamPushes call, and how it ended. */
  private static final class Answers implements StreamObserver<PushGradientsResponse> {
    final List<PushGradientsResponse> responses = new ArrayList<>();
    final CompletableFuture<Throwable> end = new CompletableFuture<>();

    @Override
    public synchronized void onNext(PushGradientsResponse r) {
      responses.add(r);
    }

    @Override
    public void onError(Throwable t) {
      end.complete(t);
    }

    @Override
    public void onCompleted() {
      end.complete(null);
    }
  }

  /** Unary pushes, then a stream of pushes: the shard's values afterwards. */
  private static List<float[]> train(Running r, long seed) throws Exception {
    Random rnd = new Random(seed);
    for (int i = 0; i < 3; i++) {
      r.stub().pushGradients(gradients(rnd));
    }
    Answers answers = new Answers();
    StreamObserver<PushGradientsRequest> pushes =
        ParameterServerGrpc.newStub(r.channel)
            .withDeadlineAfter(20, TimeUnit.SECONDS)
            .streamPushes(answers);
    for (int i = 0; i < 3; i++) {
      pushes.onNext(gradients(rnd));
    }
    pushes.onCompleted();
    assertThat(answers.end.get(20, TimeUnit.SECONDS)).isNull();
    assertThat(answers.responses).hasSize(3);
    PullParametersResponse pulled = r.stub().pullParameters(pullAll());
    assertThat(pulled.getStep()).isEqualTo(6);
    List<float[]> out = new ArrayList<>();
    pulled.getBlocksList().forEach(b -> out.add(TensorCodec.decode(b.getData())));
    return out;
  }

  private static void assertBitIdentical(List<float[]> a, List<float[]> b) {
    assertThat(a).hasSameSizeAs(b);
    for (int i = 0; i < a.size(); i++) {
      int[] x = new int[a.get(i).length];
      int[] y = new int[b.get(i).length];
      for (int j = 0; j < x.length; j++) {
        x[j] = Float.floatToRawIntBits(a.get(i)[j]);
      }
      for (int j = 0; j < y.length; j++) {
        y[j] = Float.floatToRawIntBits(b.get(i)[j]);
      }
      assertThat(x).as("block %d", i).isEqualTo(y);
    }
  }

  @Test
  void zeroCopyAndStockParsing_giveBitIdenticalSgdAndAdamValues() throws Exception {
    for (OptimizerConfig optimizer : List.of(sgd(0.1f), adam())) {
      Running zero = new Running(true);
      Running stock = new Running(false);
      initialise(zero, optimizer, 7);
      initialise(stock, optimizer, 7);
      assertBitIdentical(train(zero, 11), train(stock, 11));
      assertThat(zero.parses("paramserver.pserver.zero.copy.parses")).isGreaterThanOrEqualTo(7);
      assertThat(stock.parses("paramserver.pserver.zero.copy.parses")).isZero();
      assertThat(stock.parses("paramserver.pserver.zero.copy.fallbacks")).isZero();
      assertThat(zero.service.heldRequests()).isZero();
    }
  }

  @Test
  void pushPaths_releaseEveryReceivedBuffer_underParanoidLeakDetection() throws Exception {
    Running r = new Running(true);
    initialise(r, sgd(0.1f), 3);
    Random rnd = new Random(5);
    train(r, 13);
    // refused pushes: unary and on a stream (wrong size, non-finite)
    PushGradientsRequest wrongSize =
        push(tensor(0, random(rnd, BLOCK - 1), false), tensor(1, random(rnd, BLOCK), false));
    Throwable refused = catchThrowable(() -> r.stub().pushGradients(wrongSize));
    assertThat(RpcErrors.reasonOf(refused)).isEqualTo(ErrorReason.SHAPE_MISMATCH);
    float[] nan = random(rnd, BLOCK);
    nan[BLOCK / 2] = Float.NaN;
    Answers refusedStream = new Answers();
    StreamObserver<PushGradientsRequest> s =
        ParameterServerGrpc.newStub(r.channel)
            .withDeadlineAfter(20, TimeUnit.SECONDS)
            .streamPushes(refusedStream);
    s.onNext(gradients(rnd));
    s.onNext(push(tensor(0, nan, false)));
    s.onNext(gradients(rnd)); // after the refusal: read or not, never applied
    Throwable streamError = refusedStream.end.get(20, TimeUnit.SECONDS);
    assertThat(RpcErrors.reasonOf(streamError)).isEqualTo(ErrorReason.NON_FINITE_GRADIENT);
    s.onCompleted();
    // a refused init
    Throwable initRefused =
        catchThrowable(
            () ->
                r.stub()
                    .initParameters(
                        init(
                            "i1",
                            List.of(dense("w", 7, 4, sgd(1f))),
                            List.of(tensor(0, random(rnd, BLOCK), true)))));
    assertThat(RpcErrors.reasonOf(initRefused)).isEqualTo(ErrorReason.INIT_CONFLICT);
    // cancelled streams: with pushes in flight
    for (int i = 0; i < 5; i++) {
      Answers cancelled = new Answers();
      StreamObserver<PushGradientsRequest> c =
          ParameterServerGrpc.newStub(r.channel)
              .withDeadlineAfter(20, TimeUnit.SECONDS)
              .streamPushes(cancelled);
      c.onNext(gradients(rnd));
      c.onNext(gradients(rnd));
      c.onError(new IllegalStateException("trainer stops"));
      assertThat(cancelled.end.get(20, TimeUnit.SECONDS)).isNotNull();
    }
    assertThat(r.parses("paramserver.pserver.zero.copy.parses")).isGreaterThan(10);
    assertReleased(r);
  }

  /** Waits until the service holds no request, then provokes leak reports: there must be none. */
  private void assertReleased(Running r) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (r.service.heldRequests() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(r.service.heldRequests()).as("requests not released").isZero();
    // A leaked buffer is reported when a later buffer is tracked after it was collected: the
    // server and channel are closed (they hold nothing any more), then buffers are allocated.
    r.close();
    for (int i = 0; i < 10; i++) {
      System.gc();
      Thread.sleep(100);
      PooledByteBufAllocator.DEFAULT.directBuffer(64).release();
      UnpooledByteBufAllocator.DEFAULT.heapBuffer(64).release();
    }
    List<String> reported =
        leaks.list.stream()
            .filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR))
            .map(ILoggingEvent::getFormattedMessage)
            .toList();
    assertThat(reported).as("Netty leak reports").isEmpty();
  }
}
