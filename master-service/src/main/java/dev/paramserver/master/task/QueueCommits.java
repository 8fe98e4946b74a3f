package dev.paramserver.master.task;

import java.util.function.ToLongFunction;

/**
 * Group commit of the task queue (docs/design.md §3): the changes that concurrent calls make to the
 * queue go to etcd together, several per transaction, and each call is answered only once the
 * commit that holds its change (or, for a call that changed nothing, the newest change it saw) has
 * been confirmed.
 *
 * <p>A change is made under the owner's lock on a copy of the newest queue (the tip), which then
 * becomes the tip and joins the open {@link Batch}. A caller that waits for its batch and finds no
 * commit under way commits the tip as it is then, with every change made so far, outside the lock;
 * the callers that arrive meanwhile wait and are committed together by the next committer. A failed
 * commit fails every change it held, and the changes made after it on top of them, with the same
 * exception, and the tip goes back to the last committed queue (the owner drops the state
 * altogether when the failure was a lost leadership).
 *
 * <p>The tip is never changed in place (every change is made on a copy), so a queue once taken for
 * a commit stays as it was while it is encoded and saved. Every method but {@link #await} is called
 * with the owner's lock held.
 */
final class QueueCommits {
  /** Changes committed together, or waiting for their commit. */
  static final class Batch {
    private int changes;
    private boolean durable;
    private RuntimeException failure;
  }

  private final Object lock;
  private final ToLongFunction<TaskQueue> save;
  private TaskQueue tip;
  private TaskQueue committed;
  private Batch open = new Batch();
  private Batch inFlight;
  private Batch newest;
  private long commits;
  private long changesCommitted;
  // grows with every reset or drop, so that a commit taken before one does not touch what follows
  private long generation;

  /**
   * @param lock the owner's lock, held by the owner around every call but {@link #await}
   * @param save writes a queue to the store (fenced) and returns its stored size; it throws the
   *     exception the callers of a failed commit get
   */
  QueueCommits(Object lock, ToLongFunction<TaskQueue> save) {
    this.lock = lock;
    this.save = save;
  }

  /** The newest queue, with the changes not yet committed; null when there is none. */
  TaskQueue tip() {
    return tip;
  }

  /** Starts from {@code q}, already persisted (or null: no queue). */
  void reset(TaskQueue q) {
    generation++;
    tip = q;
    committed = q;
    // changes not yet taken for a commit were made on the queue now replaced
    fail(open, new IllegalStateException("the job was reloaded before the change was saved"));
    open = new Batch();
    newest = inFlight;
    lock.notifyAll();
  }

  /**
   * Drops the queue, failing every change not yet taken for a commit with {@code why} (a commit
   * under way still answers its callers with its own outcome).
   */
  void drop(RuntimeException why) {
    generation++;
    tip = null;
    committed = null;
    fail(open, why);
    open = new Batch();
    newest = inFlight;
    lock.notifyAll();
  }

  /** Makes {@code changed} (a changed copy of the tip) the tip; returns the batch to wait for. */
  Batch changed(TaskQueue changed) {
    tip = changed;
    open.changes++;
    newest = open;
    lock.notifyAll();
    return open;
  }

  /**
   * The batch holding the newest change, for a call that changed nothing but answers from what it
   * saw; null when every change is committed.
   */
  Batch newest() {
    return newest;
  }

  /** Transactions committed so far, and the changes they held. */
  long commits() {
    return commits;
  }

  long changesCommitted() {
    return changesCommitted;
  }

  /**
   * Returns once {@code batch} is committed, committing it if no commit is under way, or throws the
   * exception its commit failed with. Called without the owner's lock; null returns at once.
   */
  void await(Batch batch) {
    if (batch == null) {
      return;
    }
    boolean interrupted = false;
    try {
      while (true) {
        Batch taken;
        TaskQueue toSave;
        long takenIn;
        synchronized (lock) {
          while (!batch.durable && batch.failure == null && inFlight != null) {
            try {
              lock.wait();
            } catch (InterruptedException e) {
              // the commit is bounded by the store's timeout: wait for its outcome all the same
              interrupted = true;
            }
          }
          if (batch.durable) {
            return;
          }
          if (batch.failure != null) {
            throw batch.failure;
          }
          // no commit under way and the batch is not committed: it is the open one
          taken = open;
          toSave = tip;
          inFlight = taken;
          open = new Batch();
          takenIn = generation;
        }
        commit(taken, toSave, takenIn);
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void commit(Batch taken, TaskQueue toSave, long takenIn) {
    RuntimeException failure = null;
    try {
      save.applyAsLong(toSave);
    } catch (RuntimeException e) {
      failure = e;
    }
    synchronized (lock) {
      inFlight = null;
      if (failure == null) {
        taken.durable = true;
        commits++;
        changesCommitted += taken.changes;
        if (generation == takenIn) {
          committed = toSave;
        }
        if (newest == taken) {
          newest = null;
        }
      } else {
        fail(taken, failure);
        if (generation == takenIn) {
          // the changes made since were made on top of the failed ones
          fail(open, failure);
          open = new Batch();
          newest = null;
          tip = committed;
        }
      }
      lock.notifyAll();
    }
  }

  private static void fail(Batch b, RuntimeException why) {
    if (b.changes > 0 && !b.durable && b.failure == null) {
      b.failure = why;
    }
  }
}
