package dev.paramserver.trainer.pserver;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.IntToLongFunction;

/**
 * The pushes of one trainer to one pserver, on one {@code StreamPushes} call at a time: the
 * requests written and not yet answered, in order, and the call they were written on. Every method
 * runs on the training thread; the call's callbacks (on gRPC's threads) only queue {@link Event}s,
 * which {@link StreamedPushes} hands back to this lane on the training thread. Each call has a
 * generation, so that the events of a call given up (failed, timed out) are ignored.
 *
 * <p>The stream answers in order and applies nothing after its first error, so after a failure
 * every request not answered is written again, in order and with the same identity, on a new call:
 * at most one of them was applied without its answer arriving, and the pserver answers that one
 * {@code duplicate = true}. A pserver that does not serve {@code StreamPushes} (older than the
 * trainer) gets the same requests one at a time by {@code PushGradients} instead ({@link #unary}).
 *
 * <p>Pulls ride on the call too, once its pserver said it serves them ({@code serves_pulls} on an
 * answer of the call): {@link #pull} writes one on the open call, and its answer (in turn with the
 * pushes') completes its future on gRPC's thread. A pull is never written again: when its call ends
 * or the pserver declines it, its future fails and the caller pulls by {@code PullParameters}.
 */
final class PushLane {
  /** What a call reported, for the training thread. */
  record Event(
      PushLane lane, int generation, PushGradientsResponse answer, Throwable error, Kind kind) {
    enum Kind {
      ANSWER,
      ERROR,
      COMPLETED,
      READY
    }
  }

  /** One request of a push, and when it was last written. */
  static final class Part {
    final StreamedPush push;
    final PushGradientsRequest request;
    long writtenNanos;
    boolean counted;
    // paces the resends of the request this part is (a piece of), once it was refused with MOVED
    MovedPacing movedPacing;
    private final AtomicBoolean acknowledged = new AtomicBoolean();

    Part(StreamedPush push, PushGradientsRequest request) {
      this.push = push;
      this.request = request;
    }

    /** An answer to this request arrived (on any call): counts it for its push once. */
    void acknowledge() {
      if (acknowledged.compareAndSet(false, true)) {
        push.acknowledgedOne();
      }
    }
  }

  private final int ps;
  private final PserverDirectory directory;
  private final BlockingQueue<Event> events;
  private final long timeoutMs;
  // the step through which every push first sent to a pserver index was acknowledged
  private final IntToLongFunction acknowledgedThrough;
  private final List<Part> unanswered = new ArrayList<>();
  // how many of unanswered are pieces of other servers' pushes (resent after MOVED)
  private int pieces;
  // how many of unanswered (from the first) were written on the current call
  private int written;
  private ClientCallStreamObserver<PushGradientsRequest> call;
  // the requests written on the current call not yet answered, shared with its callbacks
  private LaneObserver observer;
  private ListenableFuture<PushGradientsResponse> unaryCall;
  private int generation;
  private boolean unary;
  // an answer of the current call said its pserver serves pulls on it
  private boolean servesPulls;
  // set while the lane waits to write its requests again after a failure
  private Throwable failure;
  private long retryAtNanos;

  /**
   * @param acknowledgedThrough for a pserver index, the step through which every push first sent to
   *     it was acknowledged (over every lane: pieces of its pushes resent after MOVED count)
   */
  PushLane(
      int ps,
      PserverDirectory directory,
      BlockingQueue<Event> events,
      long timeoutMs,
      IntToLongFunction acknowledgedThrough) {
    this.ps = ps;
    this.acknowledgedThrough = acknowledgedThrough;
    this.directory = directory;
    this.events = events;
    this.timeoutMs = timeoutMs;
  }

  int pserver() {
    return ps;
  }

  /**
   * Writes a pull on the current call when its pserver serves pulls there, whether or not its flow
   * control says it is ready: a push of one batch alone is more than gRPC's ready threshold, so a
   * pull planned right after it would otherwise go by {@code PullParameters} most of the time; the
   * pulls in flight are few (one per batch pair planned ahead) and small beside the pushes.
   *
   * @return the answer to come (failed with {@link LaneObserver.PullNotStreamed} when declined or
   *     when the call ends first), or null: the caller pulls by {@code PullParameters}
   */
  CompletableFuture<PullParametersResponse> pull(PullParametersRequest request) {
    if (failure != null || unary || call == null || !servesPulls) {
      return null;
    }
    CompletableFuture<PullParametersResponse> answer = new CompletableFuture<>();
    observer.pulls.add(answer);
    call.onNext(PushGradientsRequest.newBuilder().setPull(request).build());
    return answer;
  }

  /** Queues a request to write (after those queued before it). */
  void add(Part part) {
    unanswered.add(part);
    if (part.request.getOrigin() != 0) {
      pieces++;
    }
  }

  private Part removeFirst() {
    Part p = unanswered.remove(0);
    if (p.request.getOrigin() != 0) {
      pieces--;
    }
    return p;
  }

  /**
   * The step of the oldest request not answered that was first sent to {@code origin}, or
   * MAX_VALUE: this lane's own requests are in step order, pieces of other servers' pushes (rare,
   * counted) are looked through only when the lane holds some.
   */
  long oldestStepOf(int origin) {
    long oldest = Long.MAX_VALUE;
    if (origin == ps && pieces == 0) {
      return unanswered.isEmpty() ? oldest : unanswered.get(0).request.getStep();
    }
    if (origin != ps && pieces == 0) {
      return oldest;
    }
    for (Part p : unanswered) {
      if (originOf(p) == origin) {
        oldest = Math.min(oldest, p.request.getStep());
      }
    }
    return oldest;
  }

  /** The pserver a request was first sent to: its origin, or this lane's for its own. */
  int originOf(Part p) {
    int origin = p.request.getOrigin();
    return origin != 0 ? origin - 1 : ps;
  }

  /**
   * Takes the oldest request out of a failed lane: it was refused (MOVED) and goes elsewhere in
   * pieces.
   */
  Part removeHead() {
    if (failure == null) {
      throw new IllegalStateException("pserver " + ps + "'s lane takes a request out only failed");
    }
    return removeFirst();
  }

  /** The oldest request not answered, or null. */
  Part head() {
    return unanswered.isEmpty() ? null : unanswered.get(0);
  }

  int unanswered() {
    return unanswered.size();
  }

  /**
   * Requests queued that are still to be written on the open stream (the writer waits for the
   * stream to be ready for them). Not while the lane waits to retry, nor for a pserver pushed to by
   * {@code PushGradientsRequest}s one at a time: each is written when the one before is answered.
   */
  boolean mustWrite() {
    return failure == null && !unary && written < unanswered.size();
  }

  boolean failed() {
    return failure != null;
  }

  /** What the lane failed with (null when it did not). */
  Throwable failureCause() {
    return failure;
  }

  boolean isUnary() {
    return unary;
  }

  /**
   * Writes the requests not written yet, as far as the call's flow control allows ({@code
   * isReady}); opens a call if none is open. Does nothing while the lane waits to retry. The caller
   * counts the bytes of each request written the first time ({@code onFirstWrite}).
   */
  void pump(Consumer<Part> onFirstWrite) {
    if (failure != null) {
      return;
    }
    if (unary) {
      if (unaryCall == null && written < unanswered.size()) {
        writeUnary(unanswered.get(written++), onFirstWrite);
      }
      return;
    }
    while (written < unanswered.size()) {
      if (call == null && !open()) {
        return;
      }
      if (!call.isReady()) {
        return;
      }
      Part p = unanswered.get(written++);
      p.writtenNanos = System.nanoTime();
      if (!p.counted) {
        p.counted = true;
        onFirstWrite.accept(p);
      } else {
        p.push.troubled();
      }
      observer.written.add(p);
      call.onNext(withWatermark(p));
    }
  }

  /**
   * The request as written now: every step below the oldest request not answered was acknowledged
   * by the server it was first sent to (the requests are answered in order), so the pserver may
   * treat them as done. A piece resent after MOVED carries its origin server's.
   */
  private PushGradientsRequest withWatermark(Part p) {
    PushGradientsRequest req = p.request;
    long through = acknowledgedThrough.applyAsLong(originOf(p));
    return req.hasAcknowledgedThrough() && req.getAcknowledgedThrough() == through
        ? req
        : req.toBuilder().setAcknowledgedThrough(through).build();
  }

  private boolean open() {
    ParameterServerGrpc.ParameterServerFutureStub stub = directory.stub(ps);
    if (stub == null) {
      unregistered();
      return false;
    }
    int g = ++generation;
    servesPulls = false;
    observer = new LaneObserver(this, g, events);
    // no deadline on the call, which lives as long as the trainer pushes: each request's answer
    // is awaited for at most the call timeout instead (see checkDeadline)
    call =
        (ClientCallStreamObserver<PushGradientsRequest>)
            ParameterServerGrpc.newStub(stub.getChannel()).streamPushes(observer);
    return true;
  }

  private void writeUnary(Part p, Consumer<Part> onFirstWrite) {
    ParameterServerGrpc.ParameterServerFutureStub stub = directory.stub(ps);
    if (stub == null) {
      written--;
      unregistered();
      return;
    }
    int g = ++generation;
    p.writtenNanos = System.nanoTime();
    if (!p.counted) {
      p.counted = true;
      onFirstWrite.accept(p);
    } else {
      p.push.troubled();
    }
    ListenableFuture<PushGradientsResponse> f =
        stub.withDeadlineAfter(timeoutMs, TimeUnit.MILLISECONDS).pushGradients(withWatermark(p));
    unaryCall = f;
    f.addListener(
        () -> {
          try {
            PushGradientsResponse answer = f.get();
            p.acknowledge();
            events.add(new Event(this, g, answer, null, Event.Kind.ANSWER));
          } catch (ExecutionException e) {
            events.add(new Event(this, g, null, e.getCause(), Event.Kind.ERROR));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        },
        MoreExecutors.directExecutor());
  }

  /**
   * The pserver has no address (its registration ended): fails the lane as a failed call does, by
   * an event, so that the failure is acted on (the address read again, after a backoff) and the
   * requests are written again once it is registered; or, when the committed placement gives it
   * nothing (emptied by a shrink), with MOVED, so they are re-split by that placement.
   */
  private void unregistered() {
    Throwable cause =
        directory
            .emptiedAndGone(ps)
            .orElseGet(
                () ->
                    Status.UNAVAILABLE
                        .withDescription("pserver " + ps + " is not registered")
                        .asRuntimeException());
    fail(cause);
    events.add(new Event(this, generation, null, cause, Event.Kind.ERROR));
  }

  /** The oldest request, answered by {@code event}; null if the event is of an older call. */
  Part answered(Event event) {
    if (event.generation() != generation || written == 0) {
      return null;
    }
    written--;
    unaryCall = null;
    servesPulls |= event.answer().getServesPulls();
    return removeFirst();
  }

  /** True when {@code event} ends the current call (a failure to act on). */
  boolean ends(Event event) {
    if (event.generation() != generation) {
      return false;
    }
    if (event.kind() == Event.Kind.COMPLETED && unanswered.isEmpty()) {
      call = null;
      return false;
    }
    return true;
  }

  /** Gives the current call up after {@code cause}; the requests wait for {@link #retryAt}. */
  void fail(Throwable cause) {
    if (call != null) {
      call.cancel("given up: " + cause.getMessage(), null);
    }
    if (unaryCall != null) {
      unaryCall.cancel(false);
    }
    generation++;
    call = null;
    unaryCall = null;
    servesPulls = false;
    written = 0;
    failure = cause;
    retryAtNanos = Long.MAX_VALUE;
  }

  /** Writes the requests not answered again, on a new call, from {@code nanos} on. */
  void retryAt(long nanos) {
    retryAtNanos = nanos;
  }

  /** A failed lane whose wait before writing again is over: clears the failure. */
  boolean retryDue(long now) {
    if (failure != null && now - retryAtNanos >= 0) {
      failure = null;
      return true;
    }
    return false;
  }

  /** Nanoseconds until a failed lane retries (0 if due, MAX_VALUE if not failed). */
  long nanosToRetry(long now) {
    return failure == null ? Long.MAX_VALUE : Math.max(0, retryAtNanos - now);
  }

  /** From now on requests go one at a time by {@code PushGradients}. */
  void toUnary() {
    unary = true;
  }

  /**
   * Fails the current call when its oldest request written has waited longer than the timeout for
   * its answer (the pserver hangs, or the connection died without telling).
   *
   * @return true if it did
   */
  boolean checkDeadline(long now) {
    if (call == null || written == 0) {
      return false;
    }
    long waited = TimeUnit.NANOSECONDS.toMillis(now - unanswered.get(0).writtenNanos);
    if (waited <= timeoutMs) {
      return false;
    }
    fail(
        Status.DEADLINE_EXCEEDED
            .withDescription(
                "pserver " + ps + " did not answer a streamed push within " + timeoutMs + " ms")
            .asRuntimeException());
    return true;
  }

  /**
   * Ends the call: half-closes it when every request was answered, else cancels it.
   *
   * @return the requests never answered (forgotten)
   */
  int close() {
    int lost = unanswered.size();
    for (Part p : unanswered) {
      p.push.dropped(
          "the push to pserver " + ps + " was not acknowledged before the trainer stopped");
    }
    if (call != null) {
      if (lost == 0) {
        call.onCompleted();
      } else {
        call.cancel("the trainer stops pushing", null);
      }
    }
    if (unaryCall != null) {
      unaryCall.cancel(false);
    }
    generation++;
    call = null;
    unaryCall = null;
    servesPulls = false;
    written = 0;
    failure = null;
    unanswered.clear();
    pieces = 0;
    return lost;
  }
}
