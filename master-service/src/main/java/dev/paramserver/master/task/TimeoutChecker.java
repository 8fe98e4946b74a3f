package dev.paramserver.master.task;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Takes back pending tasks past their deadline, every {@code interval}, while this master leads.
 */
public final class TimeoutChecker implements SmartLifecycle {
  private static final Logger log = LoggerFactory.getLogger(TimeoutChecker.class);
  private final MasterJob job;
  private final Duration interval;
  private final int phase;
  private ScheduledExecutorService executor;

  public TimeoutChecker(MasterJob job, Duration interval, int phase) {
    this.job = job;
    this.interval = interval;
    this.phase = phase;
  }

  @Override
  public synchronized void start() {
    if (executor != null) {
      return;
    }
    executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "master-task-timeouts");
              t.setDaemon(true);
              return t;
            });
    long ms = interval.toMillis();
    executor.scheduleWithFixedDelay(this::check, ms, ms, TimeUnit.MILLISECONDS);
  }

  private void check() {
    try {
      job.expireOverdue();
    } catch (RuntimeException e) {
      // a refused write already made the master step down; keep checking for the next leadership
      log.warn("checking task timeouts failed: {}", e.getMessage());
    }
  }

  @Override
  public synchronized void stop() {
    if (executor == null) {
      return;
    }
    executor.shutdownNow();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    executor = null;
  }

  @Override
  public synchronized boolean isRunning() {
    return executor != null;
  }

  @Override
  public int getPhase() {
    return phase;
  }
}
