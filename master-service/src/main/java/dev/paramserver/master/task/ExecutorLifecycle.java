package dev.paramserver.master.task;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.springframework.context.SmartLifecycle;

/**
 * A lifecycle that owns one daemon thread of the master's: made on start, handed to {@link
 * #onStart}, stopped (after {@link #onStop}) on stop.
 */
abstract class ExecutorLifecycle implements SmartLifecycle {
  private final String threadName;
  private final int phase;
  private ScheduledExecutorService executor;

  ExecutorLifecycle(String threadName, int phase) {
    this.threadName = threadName;
    this.phase = phase;
  }

  /** Called with the new thread's executor, under this object's lock. */
  abstract void onStart(ScheduledExecutorService executor);

  /** Called before the thread is stopped, under this object's lock. */
  void onStop() {}

  /** The executor while running, else null. */
  final synchronized ScheduledExecutorService executor() {
    return executor;
  }

  @Override
  public final synchronized void start() {
    if (executor != null) {
      return;
    }
    executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, threadName);
              t.setDaemon(true);
              return t;
            });
    onStart(executor);
  }

  @Override
  public final synchronized void stop() {
    if (executor == null) {
      return;
    }
    onStop();
    executor.shutdownNow();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    executor = null;
  }

  @Override
  public final synchronized boolean isRunning() {
    return executor != null;
  }

  @Override
  public final int getPhase() {
    return phase;
  }
}
