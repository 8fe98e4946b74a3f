package dev.paramserver.pserver.replication;

import dev.paramserver.pserver.shard.ShardClock;
import io.grpc.Deadline;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The time, timed waits and threads of a shard's replication: the process's own ({@link #SYSTEM})
 * in a pserver; a deterministic simulation supplies one whose time is simulated, whose waits park
 * the thread until its scheduler resumes it, and whose threads it runs one at a time (see
 * docs/explanation/reliability.md, "Deterministic simulation"). Every wait of the replication is a
 * loop that checks its condition again after {@link #timedWait} returns, so a waiter may be resumed
 * at any time (as a spurious wake-up). Nothing the replication decides reads the process's clock
 * another way (it does only to time what it logs and reports): a call's gRPC deadline comes from
 * {@link #deadlineAfter}, a record's wall-clock time from {@link #currentTimeMillis}. Slot moves
 * ({@code pserver.placement}) wait and time out on it too, and it is the shard's {@link
 * ShardClock}.
 */
public interface ReplicationClock extends ShardClock {

  /** The process's clock, monitors and threads. */
  ReplicationClock SYSTEM = new ReplicationClock() {};

  /** Milliseconds since the epoch, as {@link System#currentTimeMillis()} (times in records). */
  default long currentTimeMillis() {
    return System.currentTimeMillis();
  }

  /**
   * The deadline of a gRPC call made now that may take {@code nanos}, as {@code withDeadlineAfter}:
   * on this clock, so that a simulation's calls end on its simulated time.
   */
  default Deadline deadlineAfter(long nanos) {
    return Deadline.after(nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * The result of {@code future}, waiting at most {@code nanos}, as {@link
   * CompletableFuture#get(long, TimeUnit)}.
   */
  default <T> T get(CompletableFuture<T> future, long nanos)
      throws InterruptedException, ExecutionException, TimeoutException {
    return future.get(nanos, TimeUnit.NANOSECONDS);
  }

  /** Sleeps {@code millis}, as {@link Thread#sleep(long)} (a retry's wait between attempts). */
  default void sleep(long millis) throws InterruptedException {
    Thread.sleep(millis);
  }

  /**
   * A new executor running its tasks one at a time, in order, on a daemon thread named {@code
   * name}.
   */
  default ExecutorService singleThread(String name) {
    return Executors.newSingleThreadExecutor(
        r -> {
          Thread t = new Thread(r, name);
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * A new executor running its tasks and timers one at a time, in order, on a daemon thread named
   * {@code name} (a slot move's timeout).
   */
  default ScheduledExecutorService timer(String name) {
    return Executors.newSingleThreadScheduledExecutor(
        r -> {
          Thread t = new Thread(r, name);
          t.setDaemon(true);
          return t;
        });
  }
}
