package dev.paramserver.trainer.testing;

import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.FinishInitResponse;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.InitParametersResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A pserver for in-process tests: holds dense blocks, applies plain SGD ({@code value -= lr *
 * grad}), and fails on demand (unavailable for a number of calls, restarted empty, a withdrawn
 * synchronous step, a push held until released).
 */
public final class FakePserver extends ParameterServerGrpc.ParameterServerImplBase
    implements AutoCloseable {
  private final String name = "fake-ps-" + UUID.randomUUID();
  private final float learningRate;
  private final Map<String, TensorBlock> blocks = new ConcurrentHashMap<>();
  private final Map<String, TensorBlock> staged = new ConcurrentHashMap<>();
  private volatile boolean initialised;
  private volatile String initId = "";
  private final AtomicInteger unavailableCalls = new AtomicInteger();
  private final AtomicInteger withdrawnPushes = new AtomicInteger();
  private final AtomicInteger pushes = new AtomicInteger();
  private final List<PushGradientsRequest> received = new CopyOnWriteArrayList<>();
  private final AtomicInteger pulls = new AtomicInteger();
  private final AtomicInteger inits = new AtomicInteger();
  private volatile CountDownLatch pushArrived;
  private volatile CountDownLatch releasePush;
  private final Server server;

  public FakePserver(float learningRate) throws IOException {
    this.learningRate = learningRate;
    this.server = InProcessServerBuilder.forName(name).addService(this).build();
    server.start();
  }

  /** The in-process name, registered as this pserver's address. */
  public String address() {
    return name;
  }

  /** Answers the next {@code n} calls with UNAVAILABLE. */
  public void unavailableFor(int n) {
    unavailableCalls.set(n);
  }

  /** Forgets every value, as a pserver restarted without a checkpoint. */
  public void wipe() {
    initialised = false;
    blocks.clear();
    staged.clear();
  }

  /** Answers the next {@code n} pushes with SYNC_ABORTED. */
  public void withdrawPushes(int n) {
    withdrawnPushes.set(n);
  }

  /** Holds the next push until {@link #releasePush()}; returns a latch counted down on arrival. */
  public CountDownLatch holdNextPush() {
    releasePush = new CountDownLatch(1);
    pushArrived = new CountDownLatch(1);
    return pushArrived;
  }

  public void releasePush() {
    CountDownLatch l = releasePush;
    if (l != null) {
      l.countDown();
    }
  }

  public boolean initialised() {
    return initialised;
  }

  public int pushes() {
    return pushes.get();
  }

  /** The last {@code n} push requests received (answered or not), oldest first. */
  public List<PushGradientsRequest> lastPushes(int n) {
    List<PushGradientsRequest> all = List.copyOf(received);
    return all.subList(Math.max(0, all.size() - n), all.size());
  }

  public int pulls() {
    return pulls.get();
  }

  public int inits() {
    return inits.get();
  }

  /** The value of element {@code i} of a block, or NaN if the block is unknown. */
  public float value(String param, int block, int i) {
    TensorBlock b = blocks.get(param + "#" + block);
    return b == null ? Float.NaN : TensorCodec.decode(b.getData(), b.getDtype())[i];
  }

  private boolean failed(StreamObserver<?> out) {
    if (unavailableCalls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      out.onError(Status.UNAVAILABLE.withDescription("fake pserver is down").asRuntimeException());
      return true;
    }
    return false;
  }

  private boolean notInitialised(StreamObserver<?> out) {
    if (!initialised) {
      out.onError(RpcErrors.toStatus(ErrorReason.NOT_INITIALIZED, "fake pserver has no values"));
      return true;
    }
    return false;
  }

  @Override
  public void getShardStatus(GetShardStatusRequest req, StreamObserver<ShardStatus> out) {
    if (failed(out)) {
      return;
    }
    out.onNext(ShardStatus.newBuilder().setInitialised(initialised).setInitId(initId).build());
    out.onCompleted();
  }

  @Override
  public void initParameters(
      InitParametersRequest req, StreamObserver<InitParametersResponse> out) {
    if (failed(out)) {
      return;
    }
    inits.incrementAndGet();
    for (TensorBlock b : req.getBlocksList()) {
      staged.put(b.getName() + "#" + b.getBlock(), b);
    }
    out.onNext(InitParametersResponse.newBuilder().setBlocks(req.getBlocksCount()).build());
    out.onCompleted();
  }

  @Override
  public void finishInit(FinishInitRequest req, StreamObserver<FinishInitResponse> out) {
    if (failed(out)) {
      return;
    }
    blocks.putAll(staged);
    staged.clear();
    initId = req.getInitId();
    initialised = true;
    out.onNext(FinishInitResponse.getDefaultInstance());
    out.onCompleted();
  }

  @Override
  public void pushGradients(PushGradientsRequest req, StreamObserver<PushGradientsResponse> out) {
    pushes.incrementAndGet();
    received.add(req);
    CountDownLatch arrived = pushArrived;
    if (arrived != null) {
      pushArrived = null;
      arrived.countDown();
      awaitRelease();
    }
    if (failed(out) || notInitialised(out)) {
      return;
    }
    if (withdrawnPushes.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      out.onError(RpcErrors.toStatus(ErrorReason.SYNC_ABORTED, "fake step withdrawn"));
      return;
    }
    for (TensorBlock g : req.getGradientsList()) {
      String key = g.getName() + "#" + g.getBlock();
      TensorBlock b = blocks.get(key);
      float[] v = TensorCodec.decode(b.getData(), b.getDtype());
      float[] d = TensorCodec.decode(g.getData(), g.getDtype());
      for (int i = 0; i < v.length; i++) {
        v[i] -= learningRate * d[i];
      }
      blocks.put(key, b.toBuilder().setData(TensorCodec.encode(v)).build());
    }
    out.onNext(PushGradientsResponse.newBuilder().setStep(req.getStep()).build());
    out.onCompleted();
  }

  private void awaitRelease() {
    try {
      if (!releasePush.await(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the held push was never released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void pullParameters(
      PullParametersRequest req, StreamObserver<PullParametersResponse> out) {
    pulls.incrementAndGet();
    if (failed(out) || notInitialised(out)) {
      return;
    }
    PullParametersResponse.Builder resp = PullParametersResponse.newBuilder();
    for (BlockRef ref : req.getBlocksList()) {
      TensorBlock b = blocks.get(ref.getName() + "#" + ref.getBlock());
      if (b == null) {
        out.onError(Status.NOT_FOUND.withDescription("no block " + ref).asRuntimeException());
        return;
      }
      resp.addBlocks(b);
    }
    out.onNext(resp.build());
    out.onCompleted();
  }

  @Override
  public void close() throws InterruptedException {
    releasePush();
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }
}
