package dev.paramserver.trainer.training;

import dev.paramserver.trainer.config.TrainerProperties;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.stereotype.Component;

/**
 * Ends the process when training is over on its own (job finished: 0, training failed: 1, job
 * failed: 3), if {@code paramserver.trainer.exit-when-done}; the context closes first. With {@code
 * paramserver.trainer.exit-linger}, the process first waits (at most that long) until Prometheus
 * took its metrics once more, so that the final counters of a short job are not lost between two
 * scrapes.
 */
@Component
public class TrainerExit {
  private static final Logger log = LoggerFactory.getLogger(TrainerExit.class);

  private final TrainerProperties props;
  private final ConfigurableApplicationContext context;
  private final MetricsScrapes scrapes;

  public TrainerExit(
      TrainerProperties props, ConfigurableApplicationContext context, MetricsScrapes scrapes) {
    this.props = props;
    this.context = context;
    this.scrapes = scrapes;
  }

  void exit(int code) {
    if (!props.agent().exitWhenDone()) {
      return;
    }
    long over = System.nanoTime();
    Thread t =
        new Thread(
            () -> {
              linger(over);
              log.info("training is over; shutting down with exit code {}", code);
              int exit = SpringApplication.exit(context, () -> code);
              System.exit(exit);
            },
            "trainer-exit");
    t.setDaemon(false);
    t.start();
  }

  /** Waits for a scrape that ends after {@code over}, for at most the exit linger. */
  void linger(long over) {
    Duration linger = props.agent().exitLinger();
    if (linger.isZero()) {
      return;
    }
    log.info(
        "training is over; waiting up to {} s for Prometheus to take the final metrics",
        linger.toSeconds());
    try {
      if (!scrapes.awaitScrapeAfter(over, linger)) {
        log.info("no scrape within {} s; exiting without it", linger.toSeconds());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
