package dev.paramserver.trainer.pserver;

import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.rpc.Backoff;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.pserver.PushLane.Event;
import dev.paramserver.trainer.pserver.PushLane.Part;
import dev.paramserver.trainer.pserver.RequestPlanner.Planned;
import io.grpc.Status;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asynchronous pushes on one {@code StreamPushes} call per pserver ({@link PushLane}), driven
 * entirely by the training thread: it writes a push's requests onto the streams itself, waiting
 * (never buffering without bound) while a stream's flow control says it is not ready, and takes the
 * answers in, decoding the values they return, whenever it looks ({@link #poll}) or waits ({@link
 * #await}). gRPC's threads only queue what happened.
 *
 * <p>Failures are acted on as for unary pushes ({@link PserverFailures}): a pserver that lost its
 * state is re-initialised from the oldest unanswered push's values, an unreachable one is looked up
 * again after a backoff; then every request not answered is written again, in order, with the same
 * identity. Anything else fails training. A pserver that answers {@code UNIMPLEMENTED} (older than
 * StreamPushes) gets its pushes one at a time by {@code PushGradients}.
 */
public final class StreamedPushes {
  private static final Logger log = LoggerFactory.getLogger(StreamedPushes.class);

  /** The longest a waiting training thread goes without looking at deadlines and retries. */
  private static final long TICK_MS = 20;

  private final ParameterClient client;
  private final PserverDirectory directory;
  private final PserverFailures failures;
  private final CallPolicy calls;
  private final PserverTraffic traffic;
  private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
  private final Map<Integer, PushLane> lanes = new HashMap<>();
  private final Map<Integer, Backoff> backoffs = new HashMap<>();
  // the thread that writes the pushes (the training thread): the only one that drives the lanes
  private volatile Thread owner;
  // a failure that ends training, seen by whichever thread acted on it: every later look throws it
  // (the lane it failed is never written again)
  private RuntimeException fatal;
  // true while an event is handled (which may make unary calls: no nested poll then)
  private boolean handling;
  // the acknowledgement of the last push started
  private CompletableFuture<Void> last = CompletableFuture.completedFuture(null);

  StreamedPushes(
      ParameterClient client,
      PserverDirectory directory,
      PserverFailures failures,
      CallPolicy calls,
      PserverTraffic traffic) {
    this.client = client;
    this.directory = directory;
    this.failures = failures;
    this.calls = calls;
    this.traffic = traffic;
  }

  private PushLane lane(int ps) {
    return lanes.computeIfAbsent(
        ps,
        k ->
            new PushLane(
                k, directory, events, calls.timeout().toMillis(), this::acknowledgedThrough));
  }

  /**
   * The step through which every push first sent to pserver {@code origin} was acknowledged: one
   * below the oldest not acknowledged, its own or a piece of one resent elsewhere after MOVED.
   * Called while a lane writes (under this object's monitor), with the request written unanswered.
   */
  private long acknowledgedThrough(int origin) {
    long oldest = Long.MAX_VALUE;
    for (PushLane lane : lanes.values()) {
      oldest = Math.min(oldest, lane.oldestStepOf(origin));
    }
    return oldest == Long.MAX_VALUE ? 0 : oldest - 1;
  }

  /**
   * Writes the requests of one push onto the pservers' streams and returns once each was written
   * (or its stream failed: it is then written again on recovery), waiting while a stream is not
   * ready.
   */
  synchronized StreamedPush start(
      List<Planned<PushGradientsRequest>> planned, Supplier<Parameters> latest, Parameters into) {
    owner = Thread.currentThread();
    StreamedPush push = new StreamedPush(planned.size(), latest, into, last);
    last = push.acknowledged();
    Set<PushLane> touched = new LinkedHashSet<>();
    for (Planned<PushGradientsRequest> p : planned) {
      PushLane lane = lane(p.pserver());
      lane.add(new Part(push, p.request()));
      touched.add(lane);
    }
    for (PushLane lane : touched) {
      lane.pump(this::counted);
      while (lane.mustWrite()) {
        if (calls.stopping().getAsBoolean()) {
          throw new StoppedException("waiting to write a push to pserver " + lane.pserver());
        }
        waitForEvent();
        poll();
        lane.pump(this::counted);
      }
    }
    poll();
    return push;
  }

  /**
   * Writes a pull on the push stream to {@code ps} when it serves pulls ({@link PushLane#pull});
   * null when not (no stream, failed, an older pserver).
   */
  synchronized CompletableFuture<PullParametersResponse> pull(
      int ps, PullParametersRequest request) {
    PushLane lane = lanes.get(ps);
    return lane == null ? null : lane.pull(request);
  }

  /** How long a pull written on a stream is waited for before it is made by PullParameters. */
  long pullTimeoutMs() {
    return calls.timeout().toMillis();
  }

  private void counted(Part p) {
    for (TensorBlock b : p.request.getGradientsList()) {
      traffic.pushed(b.getData().size());
    }
    for (SparseRows rows : p.request.getSparseGradientsList()) {
      traffic.pushed(rows.getData().size());
    }
  }

  /**
   * Takes in every answer arrived (oldest first), acts on failed streams, gives up calls whose
   * answers are late and writes again what a failed stream left unanswered once its wait is over.
   * Training thread only.
   *
   * @throws StoppedException when the trainer stops while a stream is failed (its unanswered
   *     requests are counted as dropped)
   */
  public synchronized void poll() {
    if (fatal != null) {
      throw fatal;
    }
    Event e;
    while ((e = events.poll()) != null) {
      handle(e);
    }
    long now = System.nanoTime();
    // a copy: acting on a failure may add the lane of a pserver not pushed to before
    for (PushLane lane : List.copyOf(lanes.values())) {
      if (lane.checkDeadline(now)) {
        handling = true;
        try {
          recover(lane, lane.failureCause());
        } finally {
          handling = false;
        }
      }
      if (lane.retryDue(now)) {
        lane.pump(this::counted);
      }
    }
  }

  /**
   * {@link #poll} when called on the thread that writes the pushes, else nothing: before a unary
   * call to a failed pserver is acted on, so that a pserver that lost its state is re-initialised
   * from the values of the oldest push it failed (one consistent set) rather than from those of the
   * call (for a row pull, the next batch's tables while they are filled).
   */
  synchronized void pollIfWriter() {
    if (Thread.currentThread() == owner && !handling) {
      poll();
    }
  }

  /** Waits until {@code push} is complete, taking answers in meanwhile. */
  public synchronized void await(StreamedPush push) {
    poll();
    while (!push.isComplete()) {
      waitForEvent();
      poll();
    }
  }

  /**
   * A future of {@code push}'s acknowledgement ({@link StreamedPush#acknowledged}) for threads
   * other than the training thread (a task's report waits for it): one that waits for it drives the
   * streams itself meanwhile, one look at a time, so that pushes left to write again after a
   * failure are written and answered even while the training thread looks elsewhere (it waits for
   * its next task, for example). The streams' state is guarded by this object's monitor.
   */
  public Future<Void> acknowledgement(StreamedPush push) {
    return new DrivenAcknowledgement(this::poll, push.acknowledged(), TICK_MS);
  }

  /** True while some push is not answered. */
  boolean busy() {
    for (PushLane lane : lanes.values()) {
      if (lane.unanswered() > 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * Waits (at most {@code wait}) for every push written to be answered, then ends the streams;
   * requests still unanswered are counted as dropped. Lanes open new streams if used again.
   */
  public synchronized void close(Duration wait) {
    long end = System.nanoTime() + wait.toNanos();
    try {
      poll();
      while (busy() && System.nanoTime() - end < 0) {
        waitForEvent();
        poll();
      }
    } catch (RuntimeException e) {
      log.warn("pushes still unanswered when closing the push streams: {}", e.toString());
    }
    for (PushLane lane : lanes.values()) {
      for (int i = lane.close(); i > 0; i--) {
        traffic.droppedPush();
      }
    }
    events.clear();
  }

  /** Waits for the next event (at most a tick, to look at deadlines and retries), handling it. */
  private void waitForEvent() {
    long now = System.nanoTime();
    long waitNanos = TimeUnit.MILLISECONDS.toNanos(TICK_MS);
    for (PushLane lane : lanes.values()) {
      waitNanos = Math.min(waitNanos, lane.nanosToRetry(now));
    }
    try {
      Event e = events.poll(waitNanos, TimeUnit.NANOSECONDS);
      if (e != null) {
        handle(e);
      }
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      throw new StoppedException("waiting for a push's answer");
    }
  }

  private void handle(Event e) {
    handling = true;
    try {
      handleEvent(e);
    } finally {
      handling = false;
    }
  }

  private void handleEvent(Event e) {
    PushLane lane = e.lane();
    switch (e.kind()) {
      case READY -> lane.pump(this::counted);
      case ANSWER -> {
        Part p = lane.answered(e);
        if (p != null) {
          backoff(lane).reset();
          taken(lane.pserver(), p, e.answer());
          lane.pump(this::counted);
        }
      }
      case ERROR, COMPLETED -> {
        if (lane.ends(e)) {
          Throwable cause =
              e.error() != null
                  ? e.error()
                  : Status.UNAVAILABLE
                      .withDescription(
                          "pserver " + lane.pserver() + " ended the push stream before answering")
                      .asRuntimeException();
          lane.fail(cause);
          recover(lane, cause);
        }
      }
    }
  }

  /** An answer taken in: counts it and takes the values it returned into its push's buffer. */
  private void taken(int ps, Part p, PushGradientsResponse answer) {
    traffic.pushRoundTrip(System.nanoTime() - p.writtenNanos);
    if (answer.getDuplicate()) {
      traffic.duplicatePush();
    }
    // an answer that leaves rows out is known to do so only from a tagged request's flag
    if (p.request.getSparseGradientsCount() > 0
        && (p.request.getWriterTag() == 0
            || answer.getDuplicate()
            || !answer.getRowsChangedOnly())) {
      p.push.troubled();
    }
    traffic.acknowledged(ps);
    StreamedPush push = p.push;
    if (p.request.getGradientsCount() > 0) {
      if (answer.getBlocksCount() == p.request.getGradientsCount()) {
        client.storeBlocks(answer.getBlocksList(), push.into());
      } else {
        // a pserver that does not know return_values: pull the blocks the push carried
        push.missing(ParameterClient.valuesOf(new Planned<>(ps, p.request)));
      }
    }
    for (SparseRows rows : answer.getSparseRowsList()) {
      client.pulledRows(rows.getData().size());
      push.rowsAnswered(rows);
    }
    if (push.answered()) {
      List<Planned<PullParametersRequest>> missing = push.takeMissing();
      if (!missing.isEmpty()) {
        client.pullInto(missing, push.into(), push.latest());
      }
    }
  }

  /**
   * Acts on a failed stream as on a failed unary push, and schedules the requests it left
   * unanswered to be written again.
   */
  private void recover(PushLane lane, Throwable cause) {
    int ps = lane.pserver();
    if (Status.fromThrowable(cause).getCode() == Status.Code.UNIMPLEMENTED && !lane.isUnary()) {
      log.warn(
          "pserver {} does not serve StreamPushes (an older server): pushing to it by"
              + " PushGradients, one request at a time",
          ps);
      lane.toUnary();
      lane.retryAt(System.nanoTime());
      return;
    }
    Part head = lane.head();
    if (head == null) {
      // an idle stream ended: the next push opens a new one
      lane.retryAt(System.nanoTime());
      return;
    }
    if (calls.stopping().getAsBoolean()) {
      for (int i = lane.close(); i > 0; i--) {
        traffic.droppedPush();
      }
      throw new StoppedException("pushing gradients to pserver " + ps);
    }
    Optional<Moved> moved = Moved.of(ps, cause);
    if (moved.isPresent()) {
      try {
        resend(lane, moved.get());
      } catch (StoppedException e) {
        throw e;
      } catch (RuntimeException e) {
        fatal = e;
        throw e;
      }
      return;
    }
    PserverFailures.Kind kind;
    try {
      kind =
          failures.handle(
              ps,
              cause,
              head.push.latest(),
              "push to",
              "writing its " + lane.unanswered() + " unanswered requests again on a new stream");
    } catch (RuntimeException e) {
      fatal = e;
      throw e;
    }
    long delayNanos =
        switch (kind) {
          case UNREACHABLE -> TimeUnit.MILLISECONDS.toNanos(backoff(lane).nextDelayMs());
          // at least the server's hint: it refused before doing anything
          case OVERLOADED ->
              Math.max(
                  TimeUnit.MILLISECONDS.toNanos(backoff(lane).nextDelayMs()),
                  RpcErrors.retryAfterOf(cause).map(java.time.Duration::toNanos).orElse(0L));
          case LOST_STATE, WITHDRAWN_STEP -> 0;
        };
    lane.retryAt(System.nanoTime() + delayNanos);
  }

  /**
   * The oldest request of a lane was refused with MOVED (the stream ended there; nothing of it was
   * applied): once the trainer routes by the epoch named (a bounded wait), it goes to the owners as
   * pieces ({@link Resplit}), each queued on its owner's lane and counted as a request of its push;
   * the lane writes the rest again on a new stream.
   */
  private void resend(PushLane lane, Moved moved) {
    traffic.movedRequest();
    // settled first: a trainer stopping meanwhile finds the request still in its lane (dropped)
    // paced per request: the other requests of the lane, routed before the move too, are refused
    // by the same epoch without that being a lack of progress
    Part head = lane.head();
    if (head.movedPacing == null) {
      head.movedPacing = new MovedPacing(calls.backoff());
    }
    client.settle(moved, head.movedPacing);
    List<Planned<PushGradientsRequest>> pieces =
        Resplit.push(
            new Planned<>(lane.pserver(), head.request),
            client.layout().routing(),
            client::resentPart);
    Part refused = lane.removeHead();
    log.info(
        "{}: resending step {} part {} as {} pieces",
        moved,
        refused.request.getStep(),
        refused.request.getPart(),
        pieces.size());
    refused.push.split(pieces.size());
    for (Planned<PushGradientsRequest> piece : pieces) {
      Part part = new Part(refused.push, piece.request());
      part.counted = true;
      part.movedPacing = refused.movedPacing;
      lane(piece.pserver()).add(part);
    }
    lane.retryAt(System.nanoTime());
    for (Planned<PushGradientsRequest> piece : pieces) {
      lane(piece.pserver()).pump(this::counted);
    }
  }

  private Backoff backoff(PushLane lane) {
    return backoffs.computeIfAbsent(lane.pserver(), k -> calls.backoff());
  }
}
