package dev.paramserver.trainer.training;

import java.time.Duration;

/**
 * When Prometheus took this trainer's metrics, as {@link TrainerExit} needs it to linger for one
 * last scrape. Owned here and implemented by the admin package's scrape filter, so that training
 * does not depend on the admin package (which reads the training progress).
 */
public interface MetricsScrapes {
  /**
   * Waits until a scrape ends after {@code sinceNanos} (a System.nanoTime() instant), for at most
   * {@code max}.
   *
   * @return whether such a scrape happened
   */
  boolean awaitScrapeAfter(long sinceNanos, Duration max) throws InterruptedException;
}
