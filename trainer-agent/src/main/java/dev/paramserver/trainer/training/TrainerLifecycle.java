package dev.paramserver.trainer.training;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.trainer.config.TrainerProperties;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * Starts the training loop once the web server listens and stops it first on shutdown (highest
 * phase), so the current batch finishes and the task goes back to the master before the HTTP server
 * and the etcd connection close.
 */
@Component
public class TrainerLifecycle implements SmartLifecycle {
  private static final Logger log = LoggerFactory.getLogger(TrainerLifecycle.class);

  private final TrainerProperties props;
  private final Coordinator coordinator;
  private final ConfigurableApplicationContext context;
  private final Duration leaseTtl;
  private final String advertiseHost;
  private final io.micrometer.core.instrument.MeterRegistry registry;
  private final ChannelFactory channels;
  private volatile TrainingLoop loop;
  private volatile boolean running;

  public TrainerLifecycle(
      TrainerProperties props,
      Coordinator coordinator,
      ConfigurableApplicationContext context,
      @Value("${paramserver.etcd.lease-ttl:10s}") Duration leaseTtl,
      @Value("${paramserver.advertise-host:127.0.0.1}") String advertiseHost,
      io.micrometer.core.instrument.MeterRegistry registry,
      ChannelFactory channels) {
    this.registry = registry;
    this.channels = channels;
    this.props = props;
    this.coordinator = coordinator;
    this.context = context;
    this.leaseTtl = leaseTtl;
    this.advertiseHost = advertiseHost;
  }

  public TrainingLoop loop() {
    return loop;
  }

  @Override
  public void start() {
    int port =
        context instanceof WebServerApplicationContext web && web.getWebServer() != null
            ? web.getWebServer().getPort()
            : 0;
    loop =
        new TrainingLoop(
            props,
            coordinator,
            leaseTtl,
            advertiseHost + ":" + port,
            this::exit,
            registry,
            channels);
    loop.start();
    running = true;
  }

  private void exit(int code) {
    if (!props.exitWhenDone()) {
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

  @Override
  public void stop() {
    TrainingLoop l = loop;
    if (l != null) {
      l.stop(Duration.ofSeconds(30));
    }
    running = false;
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  /** Stops before the web server (graceful shutdown) and before the coordinator closes. */
  @Override
  public int getPhase() {
    return Integer.MAX_VALUE;
  }
}
