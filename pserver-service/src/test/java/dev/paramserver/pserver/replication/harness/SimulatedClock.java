package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.ReplicationClock;
import io.grpc.Deadline;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** What the replication of one node sees: this scheduler's time, parking waits and threads. */
record SimulatedClock(SimulationScheduler sim, String node) implements ReplicationClock {
  private static final long EPOCH_MILLIS = 1_700_000_000_000L;

  @Override
  public long nanoTime() {
    return sim.now();
  }

  @Override
  public void timedWait(Object monitor, long nanos) throws InterruptedException {
    if (!sim.onSimulationThread()) {
      sim.leakUnlessClosing(
          "a thread not the scheduler's ("
              + Thread.currentThread().getName()
              + ") waits on the real clock in "
              + SimulationTrace.caller());
      ReplicationClock.super.timedWait(monitor, Math.min(nanos, TimeUnit.MILLISECONDS.toNanos(1)));
      return;
    }
    sim.park(monitor, nanos);
  }

  @Override
  public <T> T get(CompletableFuture<T> future, long nanos)
      throws InterruptedException, ExecutionException, TimeoutException {
    long deadline = sim.now() + nanos;
    Object monitor = future;
    future.whenComplete(
        (v, e) -> {
          synchronized (monitor) {
            monitor.notifyAll();
          }
        });
    synchronized (monitor) {
      while (!future.isDone()) {
        long left = deadline - sim.now();
        if (left <= 0) {
          throw new TimeoutException("simulated wait of " + nanos + " ns ended");
        }
        timedWait(monitor, left);
      }
    }
    return future.get();
  }

  @Override
  public long currentTimeMillis() {
    // a fixed epoch plus simulated time: records carry no wall-clock time of the run
    return EPOCH_MILLIS + TimeUnit.NANOSECONDS.toMillis(sim.now());
  }

  @Override
  public Deadline deadlineAfter(long nanos) {
    return Deadline.after(nanos, TimeUnit.NANOSECONDS, sim.ticker());
  }

  @Override
  public void sleep(long millis) throws InterruptedException {
    Object monitor = new Object();
    long deadline = sim.now() + TimeUnit.MILLISECONDS.toNanos(millis);
    synchronized (monitor) {
      while (sim.now() < deadline) {
        timedWait(monitor, deadline - sim.now());
      }
    }
  }

  @Override
  public java.util.concurrent.ExecutorService singleThread(String name) {
    return new SimulationExecutor(sim, node, true);
  }

  @Override
  public java.util.concurrent.ScheduledExecutorService timer(String name) {
    return new SimulationExecutor(sim, node, true);
  }
}
