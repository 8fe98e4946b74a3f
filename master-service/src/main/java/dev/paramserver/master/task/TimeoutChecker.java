package dev.paramserver.master.task;

import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes back pending tasks past their deadline, every {@code interval}, while this master leads.
 */
public final class TimeoutChecker extends ExecutorLifecycle {
  private static final Logger log = LoggerFactory.getLogger(TimeoutChecker.class);
  private final MasterJob job;
  private final Duration interval;

  public TimeoutChecker(MasterJob job, Duration interval, int phase) {
    super("master-task-timeouts", phase);
    this.job = job;
    this.interval = interval;
  }

  @Override
  void onStart(ScheduledExecutorService executor) {
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
}
