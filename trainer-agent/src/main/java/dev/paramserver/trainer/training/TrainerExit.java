package dev.paramserver.trainer.training;

import dev.paramserver.trainer.config.TrainerProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.stereotype.Component;

/**
 * Ends the process when training is over on its own (job finished: 0, training failed: 1, job
 * failed: 3), if {@code paramserver.trainer.exit-when-done}; the context closes first.
 */
@Component
public class TrainerExit {
  private static final Logger log = LoggerFactory.getLogger(TrainerExit.class);

  private final TrainerProperties props;
  private final ConfigurableApplicationContext context;

  public TrainerExit(TrainerProperties props, ConfigurableApplicationContext context) {
    this.props = props;
    this.context = context;
  }

  void exit(int code) {
    if (!props.agent().exitWhenDone()) {
      return;
    }
    Thread t =
        new Thread(
            () -> {
              log.info("training is over; shutting down with exit code {}", code);
              int exit = SpringApplication.exit(context, () -> code);
              System.exit(exit);
            },
            "trainer-exit");
    t.setDaemon(false);
    t.start();
  }
}
