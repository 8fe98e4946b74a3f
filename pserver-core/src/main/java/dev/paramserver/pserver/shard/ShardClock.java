package dev.paramserver.pserver.shard;

import java.util.concurrent.TimeUnit;

/**
 * The time and timed waits of the shard's waits for a slot move's outcome (a trainer's request for
 * a slot moving here waits for the commit: {@link ShardMoves#waitWith}): the process's own by
 * default. The pserver's {@code ReplicationClock} is one; a deterministic simulation supplies one
 * whose time is simulated and whose waits park the thread until its scheduler resumes it
 * (docs/explanation/reliability.md, "Deterministic simulation"). Every wait is a loop that checks
 * its condition again after {@link #timedWait} returns, so a waiter may be resumed at any time.
 */
public interface ShardClock {

  /** Monotonic nanoseconds, as {@link System#nanoTime()}. */
  default long nanoTime() {
    return System.nanoTime();
  }

  /**
   * Waits on {@code monitor} (held by the caller) for at most {@code nanos}, as {@link
   * TimeUnit#timedWait}; returns early on a notification or spuriously.
   */
  default void timedWait(Object monitor, long nanos) throws InterruptedException {
    TimeUnit.NANOSECONDS.timedWait(monitor, nanos);
  }
}
