package dev.paramserver.trainer.pserver;

import com.google.common.util.concurrent.ListenableFuture;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.trainer.pserver.RequestPlanner.Planned;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pushes gradients to and pulls parameters from every pserver at once, as the {@link
 * RequestPlanner} cuts them.
 *
 * <p>Retry policy (this is the one layer that retries pserver data calls): a pull is safe to repeat
 * and is retried with backoff until it succeeds. A push is safe to repeat too: each carries its
 * identity (trainer id, session, step, part) and a pserver applies a push once, answering a repeat
 * with {@code duplicate = true}. So a failed push is retried with the same identity, with backoff,
 * until it is acknowledged; only a trainer that stops meanwhile drops it (counted). Unary pushes
 * are sent one step at a time: step s+1 leaves only once every part of step s was acknowledged, as
 * the pservers' duplicate rule requires. Streamed pushes ({@link #startPush}, asynchronous mode)
 * may have several steps in flight, each request saying with {@code acknowledged_through} up to
 * which step every earlier one was acknowledged; a failed stream's unanswered requests are written
 * again in order on a new one ({@link StreamedPushes}). Failures are acted on by {@link
 * PserverFailures}.
 *
 * <p>A request refused with MOVED (elastic placement: nothing of it was applied) is re-split by the
 * placement the answer names, once the trainer routes by it, and each piece is sent to its owner
 * with the same identity and {@code origin} set ({@link Resplit}); the pieces' answers are taken in
 * as the refused request's would have been.
 */
public final class ParameterClient {
  private static final Logger log = LoggerFactory.getLogger(ParameterClient.class);

  private final PserverDirectory directory;
  private final RequestPlanner planner;
  private final PserverFailures failures;
  private final CallPolicy calls;
  private final PserverTraffic traffic;
  private final Object pushLock = new Object();
  private final ResentParts resentParts = new ResentParts();
  private final StreamedPushes streams;
  // The last step pushed, guarded by pushLock: every push call is the next step.
  private long step;

  public ParameterClient(
      PserverDirectory directory,
      RequestPlanner planner,
      PserverFailures failures,
      CallPolicy calls,
      PserverTraffic traffic) {
    this.directory = directory;
    this.planner = planner;
    this.failures = failures;
    this.calls = calls;
    this.traffic = traffic;
    this.streams = new StreamedPushes(this, directory, failures, calls, traffic);
  }

  /**
   * True when pushes may go on the pservers' push streams ({@link #startPush}): in asynchronous
   * mode, the only one whose pushes need not wait for each other's answers. The synchronous modes
   * push by unary calls.
   */
  public boolean streamsPushes() {
    return planner.mode() == TrainingMode.ASYNC;
  }

  /**
   * Writes a push of {@code grads}, as the client's next step, onto the pservers' push streams from
   * the calling thread (the training thread, which alone drives the streams: see {@link
   * #streams()}), each request asking for the values of its blocks in its answer. Returns once
   * every request was written, waiting while a stream's flow control holds it back; the answers are
   * taken into {@code into} by {@link StreamedPushes#poll} and {@link StreamedPushes#await}.
   * Several pushes may be in flight: each carries {@code acknowledged_through}.
   *
   * @param latest the values to re-initialise a pserver that lost its state with (read only, until
   *     the push is complete)
   * @throws IllegalStateException outside asynchronous mode
   */
  public StreamedPush startPush(Parameters grads, Parameters latest, Parameters into) {
    return startPush(grads, latest, into, false);
  }

  /**
   * As {@link #startPush(Parameters, Parameters, Parameters)}; with {@code returnRows} each sparse
   * request asks for its rows after the push too, taken into {@code into}'s sparse tables.
   */
  public StreamedPush startPush(
      Parameters grads, Parameters latest, Parameters into, boolean returnRows) {
    return startPush(grads, null, () -> latest, into, returnRows);
  }

  /**
   * As {@link #startPush(Parameters, Parameters, Parameters, boolean)}, the sparse-row gradients
   * taken from {@code rows} by table name (null: from {@code grads}' sparse tables), and the values
   * to re-initialise a pserver with built only if one needs them.
   */
  public StreamedPush startPush(
      Parameters grads,
      Map<String, FlatRows> rows,
      Supplier<Parameters> latest,
      Parameters into,
      boolean returnRows) {
    return startPush(grads, rows, latest, into, returnRows, 0);
  }

  /**
   * As {@link #startPush(Parameters, Map, Supplier, Parameters, boolean)}; with {@code returnRows}
   * and a {@code writerTag} (not 0) the sparse requests carry it, and their answers may list only
   * the rows another writer changed ({@code writer_tag}, {@link StreamedPush#changedOnly}).
   */
  public StreamedPush startPush(
      Parameters grads,
      Map<String, FlatRows> rows,
      Supplier<Parameters> latest,
      Parameters into,
      boolean returnRows,
      int writerTag) {
    if (!streamsPushes()) {
      throw new IllegalStateException(
          "pushes are streamed in asynchronous mode only, not in " + planner.mode());
    }
    synchronized (pushLock) {
      return streams.start(
          planner.pushes(grads, rows, ++step, true, returnRows, writerTag), latest, into);
    }
  }

  /** The push streams, to take answers in and wait for them (training thread only). */
  public StreamedPushes streams() {
    return streams;
  }

  /** The model's layout on the pservers (specs with their optimizers, blocks). */
  public ModelLayout layout() {
    return planner.layout();
  }

  ParameterServerGrpc.ParameterServerFutureStub stub(int ps) {
    ParameterServerGrpc.ParameterServerFutureStub s = directory.stub(ps);
    return s == null
        ? null
        : s.withDeadlineAfter(calls.timeout().toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * Sends the gradients to every pserver concurrently, as the client's next step, and retries each
   * failed request with the same identity until it is acknowledged.
   *
   * @param latest this trainer's latest values, to re-initialise a pserver that lost its state
   * @return the number of requests acknowledged (all of them)
   * @throws StoppedException when the trainer stops before every request was acknowledged (those
   *     not acknowledged are counted as dropped)
   */
  public int push(Parameters grads, Parameters latest) {
    return pushPlanned(grads, latest, false).size();
  }

  /**
   * Pushes {@code grads} as {@link #push} does and takes the new values of every dense block into
   * {@code into}, as {@link #pull} would: in asynchronous mode in the push's own answers (one round
   * trip per request), in the synchronous modes by a pull after the push.
   *
   * @param latest the values to re-initialise a pserver that lost its state with (read, never
   *     written, possibly on another thread than the caller's: nothing may change them meanwhile)
   */
  public void pushAndPull(Parameters grads, Parameters latest, Parameters into) {
    if (planner.mode() != TrainingMode.ASYNC) {
      push(grads, latest);
      pullPlanned(planner.pulls(), into, latest);
      return;
    }
    List<Answered> answered = pushPlanned(grads, latest, true);
    List<Planned<PullParametersRequest>> missing = new ArrayList<>();
    for (Answered a : answered) {
      PushGradientsRequest req = a.planned().request();
      if (req.getGradientsCount() == 0) {
        continue;
      }
      if (a.response().getBlocksCount() == req.getGradientsCount()) {
        storeBlocks(a.response().getBlocksList(), into);
      } else {
        // a pserver that does not know return_values: pull the blocks the push carried
        missing.add(valuesOf(a.planned()));
      }
    }
    pullPlanned(missing, into, latest);
  }

  static Planned<PullParametersRequest> valuesOf(Planned<PushGradientsRequest> push) {
    PullParametersRequest.Builder pull =
        PullParametersRequest.newBuilder().setTrainerId(push.request().getTrainerId());
    for (TensorBlock g : push.request().getGradientsList()) {
      pull.addBlocks(BlockRef.newBuilder().setName(g.getName()).setBlock(g.getBlock()));
    }
    return new Planned<>(push.pserver(), pull.build());
  }

  /** A push request and its answer. */
  private record Answered(Planned<PushGradientsRequest> planned, PushGradientsResponse response) {}

  private List<Answered> pushPlanned(Parameters grads, Parameters latest, boolean returnValues) {
    synchronized (pushLock) {
      return send(planner.pushes(grads, ++step, returnValues), latest);
    }
  }

  /**
   * Sends every pserver a push without gradients as the client's next step (see {@link
   * RequestPlanner#emptyPushes}).
   */
  public int pushNothing(Parameters latest) {
    synchronized (pushLock) {
      return send(planner.emptyPushes(++step), latest).size();
    }
  }

  private List<Answered> send(List<Planned<PushGradientsRequest>> planned, Parameters latest) {
    List<Future<PushGradientsResponse>> futures = new ArrayList<>();
    for (Planned<PushGradientsRequest> p : planned) {
      ParameterServerGrpc.ParameterServerFutureStub s = stub(p.pserver());
      futures.add(s == null ? null : s.pushGradients(p.request()));
      for (TensorBlock b : p.request().getGradientsList()) {
        traffic.pushed(b.getData().size());
      }
      for (SparseRows rows : p.request().getSparseGradientsList()) {
        traffic.pushed(rows.getData().size());
      }
    }
    List<Answered> answered = new ArrayList<>(planned.size());
    int ok = 0;
    try {
      for (int i = 0; i < futures.size(); i++) {
        Planned<PushGradientsRequest> p = planned.get(i);
        PushGradientsResponse resp = null;
        if (futures.get(i) != null) {
          try {
            resp = await(futures.get(i), "pushing gradients");
          } catch (ExecutionException e) {
            Optional<Moved> moved = Moved.of(p.pserver(), e.getCause());
            if (moved.isPresent()) {
              resp = pushResent(p, moved.get(), latest, new MovedPacing(calls.backoff()));
            } else {
              failures.handle(p.pserver(), e.getCause(), latest, "push to", "retrying the push");
            }
          }
        }
        if (resp == null) {
          resp = pushWithRetry(p, latest);
        }
        if (resp.getDuplicate()) {
          traffic.duplicatePush();
        }
        traffic.acknowledged(p.pserver());
        answered.add(new Answered(p, resp));
        ok++;
      }
    } catch (StoppedException e) {
      for (int i = ok; i < planned.size(); i++) {
        traffic.droppedPush();
      }
      throw e;
    }
    return answered;
  }

  /**
   * Pulls every block from every pserver into {@code params}, retrying until it succeeds; a pserver
   * that lost its state is re-initialised with {@code params} as they are.
   */
  public void pull(Parameters params) {
    pullPlanned(planner.pulls(), params, params);
  }

  /**
   * Pulls into {@code params}; a pserver that lost its state is re-initialised with {@code latest},
   * which is not {@code params} when those are a buffer being filled (a pipelined push's).
   */
  /** Pulls the blocks of {@code planned} into {@code into} (see {@link #pullPlanned}). */
  void pullInto(List<Planned<PullParametersRequest>> planned, Parameters into, Parameters latest) {
    pullPlanned(planned, into, latest);
  }

  private void pullPlanned(
      List<Planned<PullParametersRequest>> planned, Parameters params, Parameters latest) {
    // all pservers' first attempts go out at once; retries are per pserver
    List<ListenableFuture<PullParametersResponse>> futures = new ArrayList<>();
    for (Planned<PullParametersRequest> p : planned) {
      ParameterServerGrpc.ParameterServerFutureStub s = stub(p.pserver());
      futures.add(s == null ? null : s.pullParameters(p.request()));
    }
    for (int i = 0; i < futures.size(); i++) {
      Planned<PullParametersRequest> p = planned.get(i);
      PullParametersResponse resp = null;
      if (futures.get(i) != null) {
        try {
          resp = await(futures.get(i), "pulling parameters");
        } catch (ExecutionException e) {
          Optional<Moved> moved = Moved.of(p.pserver(), e.getCause());
          if (moved.isPresent()) {
            resp = pullResent(p, moved.get(), latest, new MovedPacing(calls.backoff()));
          } else {
            streams.pollIfWriter();
            failures.handle(p.pserver(), e.getCause(), latest, "pull from", "retrying");
          }
        }
      }
      storeBlocks((resp != null ? resp : pullWithRetry(p, latest)).getBlocksList(), params);
    }
  }

  /**
   * Pulls the rows of every sparse table that the ids touch into {@code params} (which should hold
   * no stale rows: the caller clears them), retrying until it succeeds.
   */
  public void pullRows(Parameters params, long[] ids) {
    if (planner.layout().sparseTables().isEmpty() || ids.length == 0) {
      return;
    }
    for (Planned<PullParametersRequest> p : planner.rowPulls(ids)) {
      PullParametersResponse resp = pullWithRetry(p, params);
      for (SparseRows rows : resp.getSparseRowsList()) {
        storeRows(rows, params);
      }
    }
  }

  /**
   * Starts pulling rows {@code ids} (by table; distinct) from every owning pserver at once, without
   * waiting: a prefetch. {@link RowPull#await} takes the answers.
   */
  public RowPull startRowPull(Map<String, long[]> ids) {
    return startRowPull(RowWants.of(ids));
  }

  /**
   * {@link #startRowPull(Map)} of {@code wants}: held rows only this writer changed may be left out
   * of the answers ({@link RowPull#wants}).
   */
  public RowPull startRowPull(RowWants wants) {
    return RowPull.start(this, planner.rowPulls(wants), wants);
  }

  /** Counts bytes of rows pulled. */
  void pulledRows(long bytes) {
    traffic.pulled(bytes);
  }

  /**
   * Sends a push to one pserver until it is acknowledged, with backoff (same identity); a push
   * refused with MOVED is re-split and its pieces sent until acknowledged ({@link #pushResent}).
   */
  private PushGradientsResponse pushWithRetry(Planned<PushGradientsRequest> p, Parameters latest) {
    return pushWithRetry(p, latest, new MovedPacing(calls.backoff()));
  }

  private PushGradientsResponse pushWithRetry(
      Planned<PushGradientsRequest> p, Parameters latest, MovedPacing movedPacing) {
    try {
      return withRetry(
          p.pserver(),
          "pushing gradients",
          "push to",
          "retrying the push",
          s -> s.pushGradients(p.request()),
          latest);
    } catch (RefusedMoved r) {
      return pushResent(p, r.moved, latest, movedPacing);
    }
  }

  /**
   * Sends a pull to one pserver until it succeeds, with backoff, re-resolving the pserver after a
   * failure (pulls are safe to repeat); a pull refused with MOVED is re-split and sent again.
   */
  PullParametersResponse pullWithRetry(Planned<PullParametersRequest> p, Parameters latest) {
    return pullWithRetry(p, latest, new MovedPacing(calls.backoff()));
  }

  /**
   * The answer to a pull whose first attempt failed with {@code failure}: one refused with MOVED is
   * re-split at once (sending it to the same pserver again would be refused again), any other is
   * retried.
   */
  PullParametersResponse pullAfter(
      Planned<PullParametersRequest> p, Throwable failure, Parameters latest) {
    Optional<Moved> moved = Moved.of(p.pserver(), failure);
    return moved.isPresent()
        ? pullResent(p, moved.get(), latest, new MovedPacing(calls.backoff()))
        : pullWithRetry(p, latest);
  }

  private PullParametersResponse pullWithRetry(
      Planned<PullParametersRequest> p, Parameters latest, MovedPacing movedPacing) {
    try {
      return withRetry(
          p.pserver(),
          "pulling parameters",
          "pull from",
          "retrying",
          s -> s.pullParameters(p.request()),
          latest);
    } catch (RefusedMoved r) {
      return pullResent(p, r.moved, latest, movedPacing);
    }
  }

  /**
   * A push refused with {@code moved}: waits until the trainer routes by the epoch named (or the
   * move was rolled back), re-splits it by the routing then and sends each piece until it is
   * acknowledged; the answer is the pieces' together. {@code pacing} paces a request refused again
   * and again without progress (its pieces share it), so a placement that does not settle is never
   * spun on.
   */
  /** A part number for a piece of a refused push of {@code step} ({@link ResentParts}). */
  int resentPart(long step) {
    return resentParts.next(step);
  }

  private PushGradientsResponse pushResent(
      Planned<PushGradientsRequest> p, Moved moved, Parameters latest, MovedPacing pacing) {
    traffic.movedRequest();
    settle(moved, pacing);
    List<Planned<PushGradientsRequest>> pieces =
        Resplit.push(p, layout().routing(), resentParts::next);
    log.info(
        "{}: resending step {} part {} as {} pieces",
        moved,
        p.request().getStep(),
        p.request().getPart(),
        pieces.size());
    List<PushGradientsResponse> answers = new ArrayList<>(pieces.size());
    for (Planned<PushGradientsRequest> piece : pieces) {
      answers.add(pushWithRetry(piece, latest, pacing));
    }
    return Resplit.mergePush(answers);
  }

  /** A pull refused with {@code moved}: as {@link #pushResent}. */
  private PullParametersResponse pullResent(
      Planned<PullParametersRequest> p, Moved moved, Parameters latest, MovedPacing pacing) {
    traffic.movedRequest();
    settle(moved, pacing);
    List<PullParametersResponse> answers = new ArrayList<>();
    for (Planned<PullParametersRequest> piece : Resplit.pull(p, layout().routing())) {
      answers.add(pullWithRetry(piece, latest, pacing));
    }
    return Resplit.mergePull(answers);
  }

  /**
   * Waits, bounded by the call timeout, until a request refused with {@code moved} may be re-split;
   * a request refused again without progress (no newer epoch named: {@link MovedPacing}) first
   * waits {@code pacing}'s next pause.
   */
  void settle(Moved moved, MovedPacing pacing) {
    long start = System.nanoTime();
    try {
      if (pacing.refusedAgain(moved)) {
        if (calls.stopping().getAsBoolean()) {
          throw new StoppedException("resending a request refused with MOVED");
        }
        pacing.pause();
      }
      if (!directory.awaitSettled(moved, calls.timeout().toMillis())) {
        log.warn(
            "{}, but the trainer saw no such epoch within {} ms: resending by {}",
            moved,
            calls.timeout().toMillis(),
            layout().routing());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoppedException("waiting for placement epoch " + moved.epoch());
    } finally {
      traffic.movedWait(System.nanoTime() - start);
    }
  }

  /** Ends a retry loop whose call was refused with MOVED: the caller re-splits the request. */
  private static final class RefusedMoved extends RuntimeException {
    final Moved moved;

    RefusedMoved(Moved moved) {
      super(moved.toString(), null, false, false);
      this.moved = moved;
    }
  }

  /** Runs {@code call} on pserver {@code ps} until it succeeds, acting on each failure. */
  private <T> T withRetry(
      int ps,
      String what,
      String callName,
      String action,
      Function<ParameterServerGrpc.ParameterServerFutureStub, Future<T>> call,
      Parameters latest) {
    return calls
        .retry()
        .until(
            what + " " + callName.substring(callName.indexOf(' ') + 1) + " pserver " + ps,
            attempt -> {
              ParameterServerGrpc.ParameterServerFutureStub s = stub(ps);
              if (s == null) {
                Optional<Moved> gone =
                    directory.emptiedAndGone(ps).flatMap(failure -> Moved.of(ps, failure));
                if (gone.isPresent()) {
                  throw new RefusedMoved(gone.get());
                }
                log.warn("pserver {} is not registered; waiting (attempt {})", ps, attempt);
                directory.invalidate(ps);
                return Optional.empty();
              }
              try {
                return Optional.of(await(call.apply(s), what));
              } catch (ExecutionException e) {
                Optional<Moved> moved = Moved.of(ps, e.getCause());
                if (moved.isPresent()) {
                  throw new RefusedMoved(moved.get());
                }
                // a push stream that failed on the same pserver is acted on first
                streams.pollIfWriter();
                failures.handle(ps, e.getCause(), latest, callName, action);
                return Optional.empty();
              }
            });
  }

  /** Waits for a call; an interrupt means the trainer stops. */
  private static <T> T await(Future<T> future, String what) throws ExecutionException {
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoppedException(what);
    }
  }

  /** Puts rows pulled (or returned by a push) into {@code params}' table of the same name. */
  void storeRows(SparseRows rows, Parameters params) {
    Parameters.SparseTable table = params.sparse(rows.getName());
    float[] all = TensorCodec.decode(rows.getData(), rows.getDtype());
    int width = table.width();
    for (int i = 0; i < rows.getRowIdsCount(); i++) {
      table.put(rows.getRowIds(i), Arrays.copyOfRange(all, i * width, (i + 1) * width));
    }
    traffic.pulled(rows.getData().size());
  }

  void storeBlocks(List<TensorBlock> blocks, Parameters params) {
    for (TensorBlock b : blocks) {
      float[] dst = params.dense(b.getName());
      int n = TensorCodec.elementCount(b.getData(), b.getDtype());
      if (b.getOffset() + n > dst.length) {
        throw new IllegalStateException(
            "pserver returned block "
                + b.getName()
                + "#"
                + b.getBlock()
                + " with "
                + n
                + " values at offset "
                + b.getOffset()
                + ", beyond the parameter's "
                + dst.length
                + " values");
      }
      TensorCodec.decode(b.getData(), b.getDtype(), dst, (int) b.getOffset());
      traffic.pulled(b.getData().size());
    }
  }
}
