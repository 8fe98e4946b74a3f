package dev.paramserver.service;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Closes the application gracefully on a separate thread, as {@link SpringApplication#exit} does
 * (lifecycle beans stop in phase order: the services drain there), then ends the JVM with the exit
 * code unless {@code paramserver.admin.exit-jvm-on-shutdown=false}. Services may call {@link
 * #requestShutdown()} themselves (for example when a job finished).
 */
public final class AdminShutdown {
  private static final Logger log = LoggerFactory.getLogger(AdminShutdown.class);

  private final ConfigurableApplicationContext context;
  private final IntConsumer jvmExit;
  private final AtomicBoolean started = new AtomicBoolean();

  /**
   * @param jvmExit what to do with the exit code once the context is closed ({@code System::exit},
   *     or nothing)
   */
  public AdminShutdown(ConfigurableApplicationContext context, IntConsumer jvmExit) {
    this.context = context;
    this.jvmExit = jvmExit;
  }

  /** Starts the graceful shutdown once; later calls return false and do nothing. */
  public boolean requestShutdown() {
    if (!started.compareAndSet(false, true)) {
      return false;
    }
    Thread t =
        new Thread(
            () -> {
              log.info("graceful shutdown requested");
              int code = SpringApplication.exit(context);
              log.info("application context closed (exit code {})", code);
              jvmExit.accept(code);
            },
            "admin-shutdown");
    t.setDaemon(false);
    t.start();
    return true;
  }

  /** True once a shutdown was requested. */
  public boolean isShuttingDown() {
    return started.get();
  }
}
