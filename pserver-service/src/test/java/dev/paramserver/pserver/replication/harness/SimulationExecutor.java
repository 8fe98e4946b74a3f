package dev.paramserver.pserver.replication.harness;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * An executor of one node whose tasks the {@link SimulationScheduler} runs: serial (one at a time,
 * in order, as a single-thread executor) or not (as a pool), and timers on the simulated clock (a
 * gRPC deadline, a network delay). Shut down, it refuses tasks as a real executor does.
 */
final class SimulationExecutor extends AbstractExecutorService implements ScheduledExecutorService {
  private final SimulationScheduler sim;
  private final String node;
  private final boolean serial;
  // Guarded by this.
  private final ArrayDeque<Runnable> queue = new ArrayDeque<>();
  private boolean running;
  private boolean shutdown;

  SimulationExecutor(SimulationScheduler sim, String node, boolean serial) {
    this.sim = sim;
    this.node = node;
    this.serial = serial;
  }

  @Override
  public void execute(Runnable task) {
    synchronized (this) {
      if (shutdown) {
        throw new RejectedExecutionException(node + ": executor shut down");
      }
      if (serial) {
        queue.add(task);
        if (running) {
          return;
        }
        running = true;
      }
    }
    if (serial) {
      sim.submit(node, this::runNext);
    } else {
      sim.submit(node, task);
    }
  }

  private void runNext() {
    Runnable task;
    synchronized (this) {
      task = queue.poll();
      if (task == null) {
        running = false;
        return;
      }
    }
    try {
      task.run();
    } finally {
      boolean more;
      synchronized (this) {
        more = !queue.isEmpty() && !shutdown;
        running = more;
      }
      if (more) {
        sim.submit(node, this::runNext);
      }
    }
  }

  @Override
  public synchronized void shutdown() {
    shutdown = true;
  }

  @Override
  public synchronized List<Runnable> shutdownNow() {
    shutdown = true;
    List<Runnable> left = new ArrayList<>(queue);
    queue.clear();
    return left;
  }

  @Override
  public synchronized boolean isShutdown() {
    return shutdown;
  }

  @Override
  public synchronized boolean isTerminated() {
    return shutdown && !running;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return isTerminated();
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return schedule(
        () -> {
          command.run();
          return null;
        },
        delay,
        unit);
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    Later<V> later = new Later<>(callable);
    later.timer = sim.schedule(node, unit.toNanos(delay), later);
    return later;
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(
      Runnable command, long initialDelay, long period, TimeUnit unit) {
    throw new UnsupportedOperationException("the simulation runs no periodic task");
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(
      Runnable command, long initialDelay, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException("the simulation runs no periodic task");
  }

  /** A task due at a simulated time. */
  private final class Later<V> extends FutureTask<V> implements ScheduledFuture<V> {
    SimulationScheduler.Timer timer;

    Later(Callable<V> callable) {
      super(callable);
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(timer.at - sim.now(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
    }

    @Override
    public boolean cancel(boolean mayInterrupt) {
      timer.cancelled = true;
      return super.cancel(false);
    }
  }
}
