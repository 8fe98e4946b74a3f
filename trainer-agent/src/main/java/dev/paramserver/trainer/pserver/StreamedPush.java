package dev.paramserver.trainer.pserver;

import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.pserver.RequestPlanner.Planned;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * One asynchronous push written onto the pservers' push streams ({@link StreamedPushes}): its
 * requests, the buffer its answers' values go into and the values that re-initialise a pserver it
 * finds without state. Complete once every request was answered and its values were taken into
 * {@link #into()} (on the training thread, as {@link StreamedPushes#poll} takes the answers in).
 */
public final class StreamedPush {
  private final Supplier<Parameters> latest;
  private Parameters latestBuilt;
  private final Parameters into;
  private final List<Planned<PullParametersRequest>> missing = new ArrayList<>();
  private final List<SparseRows> rows = new ArrayList<>();
  private final CompletableFuture<Void> acknowledged = new CompletableFuture<>();
  private final AtomicInteger unacknowledged;
  private final CompletableFuture<Void> before;
  private int unanswered;
  // a request was written again, split, answered as a duplicate or without rows_changed_only
  private boolean troubled;

  /**
   * @param before completes once the push before this one was acknowledged (or failed)
   */
  StreamedPush(
      int requests, Supplier<Parameters> latest, Parameters into, CompletableFuture<Void> before) {
    this.unanswered = requests;
    this.unacknowledged = new AtomicInteger(requests);
    this.latest = latest;
    this.into = into;
    this.before = before;
    if (requests == 0) {
      before.whenComplete(this::follow);
    }
  }

  /**
   * Completes once every request of this push and of the pushes before it was acknowledged by its
   * pserver, on whichever thread sees the last answer arrive: unlike {@link #isComplete}, it needs
   * no look from the training thread, so another thread (a task's report) may wait for it. Fails
   * when the trainer stopped before a request was acknowledged.
   */
  public CompletableFuture<Void> acknowledged() {
    return acknowledged;
  }

  /** One request was acknowledged (called once per request, on any thread). */
  void acknowledgedOne() {
    if (unacknowledged.decrementAndGet() == 0) {
      before.whenComplete(this::follow);
    }
  }

  /** The trainer stopped before a request of this push was acknowledged. */
  void dropped(String why) {
    acknowledged.completeExceptionally(new StoppedException(why));
  }

  private void follow(Void v, Throwable t) {
    if (t != null) {
      acknowledged.completeExceptionally(t);
    } else {
      acknowledged.complete(null);
    }
  }

  /** Every request was answered and the values it returned are in {@link #into()}. */
  public boolean isComplete() {
    return unanswered == 0 && missing.isEmpty();
  }

  /**
   * The values to re-initialise a pserver that lost its state with (read only), built when first
   * asked for (a push whose pservers keep their state never builds them).
   */
  Parameters latest() {
    if (latestBuilt == null) {
      latestBuilt = latest.get();
    }
    return latestBuilt;
  }

  /** Where the values the answers return go. */
  Parameters into() {
    return into;
  }

  /**
   * One request refused with MOVED goes as {@code pieces} requests instead: each is answered and
   * acknowledged on its own, and the refused one counts as both once all its pieces do.
   */
  void split(int pieces) {
    troubled = true;
    unanswered += pieces - 1;
    unacknowledged.addAndGet(pieces - 1);
  }

  /** Counts one request answered; true when it was the last. */
  boolean answered() {
    return --unanswered == 0;
  }

  /**
   * A request of this push was written again (its call failed), or answered as a duplicate or, with
   * a {@code writer_tag}, without {@code rows_changed_only}: an answer may have been lost, so the
   * rows it leaves out are not known to be unchanged.
   */
  void troubled() {
    troubled = true;
  }

  /**
   * Whether every request was answered once, at its first writing, and every answer of a request
   * with a {@code writer_tag} set {@code rows_changed_only}: each row of the push that {@link
   * #rows} does not list was, before this push, as this writer's previous push of it left it.
   */
  public boolean changedOnly() {
    return !troubled;
  }

  /** Rows an answer returned (with {@code return_rows}), kept as they came, for their owner. */
  void rowsAnswered(SparseRows answered) {
    rows.add(answered);
  }

  /**
   * The sparse rows the answers returned (pushes sent with {@code return_rows}), as they came: the
   * trainer's row cache takes them in once the push is complete.
   */
  public List<SparseRows> rows() {
    return rows;
  }

  /** A pull to make for the blocks of a request whose answer carried no values (older pserver). */
  void missing(Planned<PullParametersRequest> pull) {
    missing.add(pull);
  }

  /** The pulls still to make once every request was answered; cleared. */
  List<Planned<PullParametersRequest>> takeMissing() {
    List<Planned<PullParametersRequest>> out = List.copyOf(missing);
    missing.clear();
    return out;
  }
}
