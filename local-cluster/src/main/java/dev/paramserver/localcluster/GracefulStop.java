package dev.paramserver.localcluster;

import dev.paramserver.launcher.Signals;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Stops a group of processes together: SIGTERM to all, one shared grace period, then SIGKILL. */
final class GracefulStop {
  private static final Logger log = LoggerFactory.getLogger(GracefulStop.class);
  private static final Duration KILL_WAIT = Duration.ofSeconds(5);

  private GracefulStop() {}

  /**
   * Terminates every live process in {@code processes}; those still alive after {@code grace} are
   * killed. Returns the processes that had to be killed (by name).
   */
  static List<String> stopAll(List<ServiceProcess> processes, Duration grace) {
    List<ServiceProcess> live = new ArrayList<>();
    for (ServiceProcess sp : processes) {
      Process p = sp.process();
      if (p != null && p.isAlive()) {
        sp.intent(ServiceProcess.Intent.STOP);
        Signals.send(p.pid(), "CONT"); // a paused JVM would not act on SIGTERM
        p.destroy();
        live.add(sp);
      }
    }
    long deadline = System.nanoTime() + grace.toNanos();
    List<String> killed = new ArrayList<>();
    for (ServiceProcess sp : live) {
      Process p = sp.process();
      long left = Math.max(0, deadline - System.nanoTime());
      if (!waitFor(p, left)) {
        log.warn(
            "{} (pid {}) still running {} after SIGTERM; killing it", sp.name(), p.pid(), grace);
        p.destroyForcibly();
        killed.add(sp.name());
        waitFor(p, KILL_WAIT.toNanos());
      }
    }
    return killed;
  }

  static boolean waitFor(Process p, long nanos) {
    try {
      return p.waitFor(nanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !p.isAlive();
    }
  }
}
