package dev.paramserver.trainer.testing;

import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.FinishInitResponse;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.InitParametersResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A pserver for in-process tests: holds dense blocks and sparse rows, applies plain SGD ({@code
 * value -= lr * grad}), and fails on demand (unavailable for a number of calls, restarted empty, a
 * withdrawn synchronous step, a push or a row pull held until released). A sparse row it creates
 * lazily holds {@link #lazyRowValue}.
 */
public final class FakePserver extends ParameterServerGrpc.ParameterServerImplBase
    implements AutoCloseable {
  private final String name = "fake-ps-" + UUID.randomUUID();
  private final float learningRate;
  private final Map<String, TensorBlock> blocks = new ConcurrentHashMap<>();
  private final Map<String, TensorBlock> staged = new ConcurrentHashMap<>();
  // sparse rows by "table#id", and the width of each table (from the initialisation's specs)
  private final Map<String, float[]> rows = new ConcurrentHashMap<>();
  private final Map<String, float[]> stagedRows = new ConcurrentHashMap<>();
  private final Map<String, Integer> widths = new ConcurrentHashMap<>();
  private final List<List<SparseRows>> rowPullAnswers = new CopyOnWriteArrayList<>();
  private final List<SparseRows> initRows = new CopyOnWriteArrayList<>();
  private final List<TensorBlock> initBlocks = new CopyOnWriteArrayList<>();
  private final AtomicInteger rowPullsToHold = new AtomicInteger();
  private volatile boolean wipeAfterNextPush;
  private volatile CountDownLatch rowPullArrived;
  private volatile CountDownLatch releaseRowPull;
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
    rows.clear();
    stagedRows.clear();
  }

  /** The value of every element of a sparse row this pserver creates lazily. */
  public static float lazyRowValue(long id) {
    return 0.25f + id / 1024f;
  }

  /**
   * Holds the {@code n}-th pull of sparse rows from now (1: the next) until {@link
   * #releaseRowPull()}; returns a latch counted down when it arrives.
   */
  public CountDownLatch holdRowPull(int n) {
    releaseRowPull = new CountDownLatch(1);
    rowPullArrived = new CountDownLatch(1);
    rowPullsToHold.set(n);
    return rowPullArrived;
  }

  public void releaseRowPull() {
    CountDownLatch l = releaseRowPull;
    if (l != null) {
      l.countDown();
    }
  }

  /** The sparse rows answered to each pull of rows, oldest first. */
  public List<List<SparseRows>> rowPullAnswers() {
    return List.copyOf(rowPullAnswers);
  }

  /** The dense blocks received by every initialisation, oldest first. */
  public List<TensorBlock> initBlocks() {
    return List.copyOf(initBlocks);
  }

  /** The sparse rows received by every initialisation, oldest first. */
  public List<SparseRows> initRows() {
    return List.copyOf(initRows);
  }

  /** Applies and acknowledges the next push, then forgets every value (see {@link #wipe}). */
  public void wipeAfterNextPush() {
    wipeAfterNextPush = true;
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
    for (ParameterSpec spec : req.getParametersList()) {
      if (spec.getSparse()) {
        widths.put(spec.getName(), (int) spec.getShape(spec.getShapeCount() - 1));
      }
    }
    for (TensorBlock b : req.getBlocksList()) {
      initBlocks.add(b);
      staged.put(b.getName() + "#" + b.getBlock(), b);
    }
    for (SparseRows r : req.getSparseRowsList()) {
      initRows.add(r);
      float[] all = TensorCodec.decode(r.getData(), r.getDtype());
      int width = all.length / Math.max(1, r.getRowIdsCount());
      for (int i = 0; i < r.getRowIdsCount(); i++) {
        float[] row = new float[width];
        System.arraycopy(all, i * width, row, 0, width);
        stagedRows.put(r.getName() + "#" + r.getRowIds(i), row);
      }
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
    rows.putAll(stagedRows);
    stagedRows.clear();
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
    for (SparseRows g : req.getSparseGradientsList()) {
      float[] d = TensorCodec.decode(g.getData(), g.getDtype());
      int width = d.length / Math.max(1, g.getRowIdsCount());
      for (int i = 0; i < g.getRowIdsCount(); i++) {
        float[] row = row(g.getName(), g.getRowIds(i));
        for (int k = 0; k < width; k++) {
          row[k] -= learningRate * d[i * width + k];
        }
      }
    }
    if (wipeAfterNextPush) {
      wipeAfterNextPush = false;
      wipe();
    }
    out.onNext(PushGradientsResponse.newBuilder().setStep(req.getStep()).build());
    out.onCompleted();
  }

  private float[] row(String table, long id) {
    return rows.computeIfAbsent(
        table + "#" + id,
        k -> {
          float[] r = new float[widths.getOrDefault(table, 1)];
          Arrays.fill(r, lazyRowValue(id));
          return r;
        });
  }

  private void awaitRelease() {
    await(releasePush, "push");
  }

  private static void await(CountDownLatch release, String what) {
    try {
      if (!release.await(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the held " + what + " was never released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void pullParameters(
      PullParametersRequest req, StreamObserver<PullParametersResponse> out) {
    pulls.incrementAndGet();
    if (req.getSparseRowsCount() > 0 && rowPullsToHold.getAndUpdate(n -> n - 1) == 1) {
      rowPullArrived.countDown();
      await(releaseRowPull, "row pull");
    }
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
    if (req.getSparseRowsCount() > 0) {
      List<SparseRows> answered = new ArrayList<>();
      for (SparseRowsRef ref : req.getSparseRowsList()) {
        int width = widths.getOrDefault(ref.getName(), 1);
        float[] data = new float[ref.getRowIdsCount() * width];
        for (int i = 0; i < ref.getRowIdsCount(); i++) {
          System.arraycopy(row(ref.getName(), ref.getRowIds(i)), 0, data, i * width, width);
        }
        answered.add(
            SparseRows.newBuilder()
                .setName(ref.getName())
                .addAllRowIds(ref.getRowIdsList())
                .setDtype(DataType.FLOAT32)
                .setData(TensorCodec.encode(data))
                .build());
      }
      rowPullAnswers.add(answered);
      resp.addAllSparseRows(answered);
    }
    out.onNext(resp.build());
    out.onCompleted();
  }

  @Override
  public void close() throws InterruptedException {
    releasePush();
    releaseRowPull();
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }
}
