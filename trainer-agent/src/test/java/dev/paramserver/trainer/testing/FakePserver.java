package dev.paramserver.trainer.testing;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
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
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A pserver for in-process tests: holds dense blocks and sparse rows, applies plain SGD ({@code
 * value -= lr * grad}), and fails on demand (unavailable for a number of calls, restarted empty, a
 * withdrawn synchronous step, a push or a row pull held until released). A sparse row it creates
 * lazily holds {@link #lazyRowValue}. Pushes are applied once per identity (trainer, session, step,
 * part; a repeat is answered {@code duplicate = true}) and answered with the values of their blocks
 * when they ask for them. {@code StreamPushes} is served as the real pserver serves it (in order,
 * the first error ends the stream, manual inbound flow control), and can be broken after a number
 * of pushes, stop reading, or be refused as an older pserver would ({@code UNIMPLEMENTED}).
 */
public final class FakePserver extends ParameterServerGrpc.ParameterServerImplBase
    implements AutoCloseable {
  /** Streamed pushes a client may write ahead of those this pserver handled. */
  public static final int STREAM_WINDOW = 4;

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
  // applications of each push identity, never forgotten (for checks); seen: since the last wipe
  private final Map<String, AtomicInteger> applications = new ConcurrentHashMap<>();
  private final Set<String> seen = ConcurrentHashMap.newKeySet();
  private final AtomicInteger streamCalls = new AtomicInteger();
  private final AtomicInteger streamedPushes = new AtomicInteger();
  private final AtomicInteger breakStreamAt = new AtomicInteger();
  private volatile boolean refuseStreams;
  private volatile boolean ignoreReturnValues;
  private volatile boolean rejectPushes;
  private volatile boolean stopReading;
  // pulls on push streams: served (an answer says so), declined, or ending the stream
  private volatile boolean servePullsOnStreams;
  private final AtomicInteger streamPullsToDecline = new AtomicInteger();
  private final AtomicInteger streamPullsToFail = new AtomicInteger();
  private final AtomicInteger streamedPulls = new AtomicInteger();
  private volatile Runnable resumeReading = () -> {};
  private volatile CountDownLatch pushArrived;
  // elastic placement: keys ("name#block", "table#row") refused with MOVED to (owner, epoch)
  private volatile Predicate<String> moved = k -> false;
  private volatile int movedOwner;
  private volatile long movedEpoch;
  private final AtomicInteger refusedMoved = new AtomicInteger();
  private volatile CountDownLatch releasePush;
  private final InProcessGrpc grpc = new InProcessGrpc();

  public FakePserver(float learningRate) throws IOException {
    this.learningRate = learningRate;
    grpc.startServer(name, b -> b.addService(this));
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
    seen.clear();
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

  /**
   * Applies the {@code n}-th push streamed from now (1: the next), then ends its stream with
   * UNAVAILABLE instead of answering it: the push took effect but its answer was lost.
   */
  public void breakStreamAfter(int n) {
    breakStreamAt.set(n);
  }

  /** Refuses every push from now with BAD_ARGUMENT (INVALID_ARGUMENT): not a transient failure. */
  public void rejectPushes() {
    rejectPushes = true;
  }

  /** Answers pushes without values even when they ask for them, as an older pserver. */
  public void ignoreReturnValues() {
    ignoreReturnValues = true;
  }

  /**
   * Refuses from now every push and pull that touches a key {@code moving} accepts ({@code
   * name#block} or {@code table#row}) with MOVED naming {@code owner} and {@code epoch}, after the
   * duplicate check, applying nothing of it (as an old owner once it froze a move's slots).
   */
  public void refuseMoved(Predicate<String> moving, int owner, long epoch) {
    movedOwner = owner;
    movedEpoch = epoch;
    moved = moving;
  }

  /** Serves every key again (the move was rolled back). */
  public void serveAll() {
    moved = k -> false;
  }

  /** Requests refused with MOVED. */
  public int refusedMoved() {
    return refusedMoved.get();
  }

  /**
   * Takes the job's parameter specs without values, as a pserver added to a scaled job does when
   * the first move fills it: it serves the rows it is given from then on.
   */
  public void installedByMove(List<ParameterSpec> specs) {
    for (ParameterSpec spec : specs) {
      if (spec.getSparse()) {
        widths.put(spec.getName(), (int) spec.getShape(spec.getShapeCount() - 1));
      }
    }
    initialised = true;
  }

  /** The MOVED answer for a request touching {@code keys}, or null when none moved. */
  private Throwable movedAnswer(List<String> keys) {
    Predicate<String> m = moved;
    for (String key : keys) {
      if (m.test(key)) {
        refusedMoved.incrementAndGet();
        return RpcErrors.toStatus(
            ErrorReason.MOVED,
            "fake pserver: " + key + " moved to pserver " + movedOwner,
            Map.of(
                "owner",
                Integer.toString(movedOwner),
                "epoch",
                Long.toString(movedEpoch),
                "slot",
                "0"));
      }
    }
    return null;
  }

  private static List<String> keysOf(PushGradientsRequest req) {
    List<String> keys = new ArrayList<>();
    req.getGradientsList().forEach(g -> keys.add(g.getName() + "#" + g.getBlock()));
    for (SparseRows r : req.getSparseGradientsList()) {
      r.getRowIdsList().forEach(id -> keys.add(r.getName() + "#" + id));
    }
    return keys;
  }

  /** Answers StreamPushes with UNIMPLEMENTED, as a pserver older than it. */
  public void refuseStreams() {
    refuseStreams = true;
  }

  /**
   * Stops reading streamed pushes once the one in hand is answered (no more are requested from the
   * transport, as a pserver falling behind), until {@link #resumeReading()}.
   */
  public void stopReading() {
    stopReading = true;
  }

  public void resumeReading() {
    stopReading = false;
    resumeReading.run();
  }

  /**
   * Serves pulls on push streams from now, as a current pserver does: push answers on a stream say
   * so ({@code serves_pulls}) and a request with {@code pull} is answered with what {@code
   * PullParameters} answers, or declined when that fails. Off (the default): a pserver older than
   * pulls on streams, which reads such a request as an empty push.
   */
  public void servePullsOnStreams(boolean on) {
    servePullsOnStreams = on;
  }

  /** Declines the next {@code n} pulls read from streams. */
  public void declineStreamPulls(int n) {
    streamPullsToDecline.set(n);
  }

  /** Ends the stream with UNAVAILABLE, not answering, when it reads the next {@code n} pulls. */
  public void failStreamOnPulls(int n) {
    streamPullsToFail.set(n);
  }

  /** Pulls read from streams (answered, declined or not). */
  public int streamedPulls() {
    return streamedPulls.get();
  }

  /** StreamPushes calls opened (refused ones included). */
  public int streamCalls() {
    return streamCalls.get();
  }

  /** Pushes read from streams (answered or not). */
  public int streamedPushes() {
    return streamedPushes.get();
  }

  /** How often each push identity ({@code trainer/session/step/part}) was applied. */
  public Map<String, Integer> applications() {
    Map<String, Integer> out = new TreeMap<>();
    applications.forEach((k, v) -> out.put(k, v.get()));
    return out;
  }

  /** A push's identity; a piece resent after MOVED adds its origin ({@code @origin}). */
  private static String identity(PushGradientsRequest req) {
    String id =
        req.getTrainerId() + "/" + req.getSession() + "/" + req.getStep() + "/" + req.getPart();
    return req.getOrigin() == 0 ? id : id + "@" + req.getOrigin();
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
    if (rejectPushes) {
      out.onError(RpcErrors.toStatus(ErrorReason.BAD_ARGUMENT, "fake pserver rejects the push"));
      return;
    }
    if (withdrawnPushes.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      out.onError(RpcErrors.toStatus(ErrorReason.SYNC_ABORTED, "fake step withdrawn"));
      return;
    }
    // duplicates first: a push applied before its keys moved is still answered as one
    Throwable refused = seen.contains(identity(req)) ? null : movedAnswer(keysOf(req));
    if (refused != null) {
      out.onError(refused);
      return;
    }
    if (req.getStep() != 0 && !seen.add(identity(req))) {
      out.onNext(
          withValues(req, PushGradientsResponse.newBuilder().setStep(req.getStep()))
              .setDuplicate(true)
              .build());
      out.onCompleted();
      return;
    }
    applications.computeIfAbsent(identity(req), k -> new AtomicInteger()).incrementAndGet();
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
    PushGradientsResponse.Builder answer =
        withValues(req, PushGradientsResponse.newBuilder().setStep(req.getStep()));
    if (wipeAfterNextPush) {
      wipeAfterNextPush = false;
      wipe();
    }
    out.onNext(answer.build());
    out.onCompleted();
  }

  private PushGradientsResponse.Builder withValues(
      PushGradientsRequest req, PushGradientsResponse.Builder answer) {
    if (req.getReturnValues() && !ignoreReturnValues) {
      for (TensorBlock g : req.getGradientsList()) {
        answer.addBlocks(blocks.get(g.getName() + "#" + g.getBlock()));
      }
    }
    return answer;
  }

  @Override
  public StreamObserver<PushGradientsRequest> streamPushes(
      StreamObserver<PushGradientsResponse> responses) {
    streamCalls.incrementAndGet();
    if (refuseStreams) {
      return super.streamPushes(responses);
    }
    ServerCallStreamObserver<PushGradientsResponse> out =
        (ServerCallStreamObserver<PushGradientsResponse>) responses;
    out.disableAutoRequest();
    AtomicBoolean waiting = new AtomicBoolean();
    Runnable readNext =
        () -> {
          if (waiting.compareAndSet(true, false)) {
            out.request(1);
          }
        };
    resumeReading = readNext;
    // the transport's buffer: a real client writes ahead into the connection's flow-control window
    // while the server handles one push at a time; the in-process transport is ready only for as
    // many messages as the server requested
    out.request(STREAM_WINDOW);
    return new StreamObserver<>() {
      private boolean ended;

      @Override
      public void onNext(PushGradientsRequest req) {
        if (ended) {
          return;
        }
        Answer<PushGradientsResponse> answer = new Answer<>();
        if (servePullsOnStreams && req.hasPull()) {
          streamedPulls.incrementAndGet();
          answer.value = streamPull(req.getPull());
          if (streamPullsToFail.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            answer.error =
                Status.UNAVAILABLE
                    .withDescription("fake stream fails on a pull")
                    .asRuntimeException();
          }
        } else {
          streamedPushes.incrementAndGet();
          pushGradients(req, answer);
          if (answer.value != null) {
            answer.value = answer.value.toBuilder().setServesPulls(servePullsOnStreams).build();
          }
        }
        if (answer.error == null && breakStreamAt.getAndUpdate(n -> n - 1) == 1) {
          answer.error =
              Status.UNAVAILABLE.withDescription("fake push stream broken").asRuntimeException();
        }
        if (answer.error != null) {
          ended = true;
          out.onError(answer.error);
          return;
        }
        out.onNext(answer.value);
        waiting.set(true);
        if (!stopReading) {
          readNext.run();
        }
      }

      @Override
      public void onError(Throwable t) {
        ended = true;
      }

      @Override
      public void onCompleted() {
        if (!ended) {
          ended = true;
          out.onCompleted();
        }
      }
    };
  }

  /** A pull read from a stream: answered as by PullParameters, or declined. */
  private PushGradientsResponse streamPull(PullParametersRequest pull) {
    if (streamPullsToDecline.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      return PushGradientsResponse.newBuilder().setPullDeclined("the fake declines it").build();
    }
    Answer<PullParametersResponse> answer = new Answer<>();
    pull(pull, answer);
    return answer.error != null
        ? PushGradientsResponse.newBuilder().setPullDeclined(answer.error.toString()).build()
        : PushGradientsResponse.newBuilder().setPulled(answer.value).build();
  }

  /** What a unary call answered, to answer it on a stream. */
  private static final class Answer<T> implements StreamObserver<T> {
    T value;
    Throwable error;

    @Override
    public void onNext(T v) {
      value = v;
    }

    @Override
    public void onError(Throwable t) {
      error = t;
    }

    @Override
    public void onCompleted() {}
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
    pull(req, out);
  }

  private void pull(PullParametersRequest req, StreamObserver<PullParametersResponse> out) {
    if (req.getSparseRowsCount() > 0 && rowPullsToHold.getAndUpdate(n -> n - 1) == 1) {
      rowPullArrived.countDown();
      await(releaseRowPull, "row pull");
    }
    if (failed(out) || notInitialised(out)) {
      return;
    }
    List<String> keys = new ArrayList<>();
    req.getBlocksList().forEach(b -> keys.add(b.getName() + "#" + b.getBlock()));
    for (SparseRowsRef r : req.getSparseRowsList()) {
      r.getRowIdsList().forEach(id -> keys.add(r.getName() + "#" + id));
    }
    Throwable refused = movedAnswer(keys);
    if (refused != null) {
      out.onError(refused);
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
    grpc.close();
  }
}
