package dev.paramserver.pserver.replication;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * The pushes of a {@link PrimaryReplicator} that settle without a thread ({@code settleAsync}):
 * each is done once every record sent before it asked was answered, while the backup it asked with
 * is in sync. Every such record is a call with the replication timeout as its deadline, sent before
 * the push asked, so each is answered (or failed) before the push's own deadline: a waiter needs no
 * timer. A waiter whose backup is no longer in sync (a copy due, deposed, closed, another backup)
 * is settled as a blocking settle does, on the blocking executor, by the same deadline.
 *
 * <p>{@link #ask} and {@link #releasable} run under the replicator's monitor, which guards this;
 * {@link Waiter#finish} runs outside it.
 */
final class SettleWaiters<B> {
  /** What the waiters ask of the replicator. */
  interface Replicator<B> {
    /** Under the monitor: true while the backup's answers alone settle a push sent to {@code b}. */
    boolean inSync(B b);

    /** Under the monitor: true once every record up to {@code mine} was answered. */
    boolean answeredThrough(long mine);

    /** Outside the monitor: fails the push when the lease is lost (every answer checks it). */
    void checkLease();

    /** Outside the monitor, may wait: the blocking settle, from where the waiter stands. */
    void settle(B b, long mine, long deadline);
  }

  private final Replicator<B> replicator;
  private final int index;
  private final ArrayDeque<Waiter<B>> waiting = new ArrayDeque<>();

  /**
   * @param index the shard's, for errors
   */
  SettleWaiters(Replicator<B> replicator, int index) {
    this.replicator = replicator;
    this.index = index;
  }

  /**
   * Under the monitor: a push asks to settle once the records up to {@code mine} are answered.
   * Returns the waiter; when it is not queued (done already, or not in sync) the caller finishes it
   * at once, outside the monitor.
   */
  Waiter<B> ask(long mine, B backup, long deadline, Executor blocking) {
    Waiter<B> w = new Waiter<>(replicator, index, mine, backup, deadline, blocking);
    w.synced = replicator.inSync(backup);
    w.queued = w.synced && !replicator.answeredThrough(mine);
    if (w.queued) {
      waiting.add(w);
    }
    return w;
  }

  /**
   * Under the monitor: removes the waiters that are done waiting (their records answered, or their
   * backup no longer in sync), in the order they asked; the caller finishes them outside it.
   */
  List<Waiter<B>> releasable() {
    if (waiting.isEmpty()) {
      return List.of();
    }
    List<Waiter<B>> out = new ArrayList<>();
    for (Iterator<Waiter<B>> it = waiting.iterator(); it.hasNext(); ) {
      Waiter<B> w = it.next();
      boolean synced = replicator.inSync(w.backup);
      if (!synced || replicator.answeredThrough(w.mine)) {
        w.synced = synced;
        out.add(w);
        it.remove();
      }
    }
    return out;
  }

  /** One push settling without a thread. */
  static final class Waiter<B> {
    private final Replicator<B> replicator;
    private final int index;
    private final long mine;
    private final B backup;
    private final long deadline;
    private final Executor blocking;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    // set under the monitor: whether the backup was in sync when released, whether it waits
    private boolean synced;
    private boolean queued;

    private Waiter(
        Replicator<B> replicator,
        int index,
        long mine,
        B backup,
        long deadline,
        Executor blocking) {
      this.replicator = replicator;
      this.index = index;
      this.mine = mine;
      this.backup = backup;
      this.deadline = deadline;
      this.blocking = blocking;
    }

    boolean queued() {
      return queued;
    }

    /**
     * Outside the monitor: completes the push, or hands what needs a thread to {@code blocking}.
     */
    void finish() {
      if (synced) {
        try {
          replicator.checkLease();
          done.complete(null);
        } catch (RuntimeException e) {
          done.completeExceptionally(e);
        }
        return;
      }
      try {
        blocking.execute(
            () -> {
              try {
                replicator.settle(backup, mine, deadline);
                done.complete(null);
              } catch (RuntimeException e) {
                done.completeExceptionally(e);
              }
            });
      } catch (RejectedExecutionException e) {
        done.completeExceptionally(
            new ServiceException(
                ErrorReason.SHUTTING_DOWN,
                "pserver " + index + " is shutting down: the push is not acknowledged; retry"));
      }
    }
  }
}
