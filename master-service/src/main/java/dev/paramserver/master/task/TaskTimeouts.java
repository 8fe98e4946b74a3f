package dev.paramserver.master.task;

import dev.paramserver.master.config.MasterProperties;
import java.time.Duration;
import java.util.Arrays;

/**
 * The timeout given to a dispatched task: the configured one, or, when the adaptive timeout is
 * enabled, a multiple of the median duration of the recently finished tasks, between a floor and a
 * ceiling. Thread-safe.
 */
public final class TaskTimeouts {
  private final Duration fixed;
  private final MasterProperties.AdaptiveTimeout adaptive;
  private final long[] recent;
  private int count;
  private int next;

  public TaskTimeouts(Duration fixed, MasterProperties.AdaptiveTimeout adaptive) {
    this.fixed = fixed;
    this.adaptive = adaptive;
    this.recent = new long[adaptive.window()];
  }

  /** Records how long a finished task took. */
  public synchronized void record(long durationMs) {
    if (durationMs < 0) {
      return;
    }
    recent[next] = durationMs;
    next = (next + 1) % recent.length;
    count = Math.min(count + 1, recent.length);
  }

  /** The timeout for the next dispatch. */
  public synchronized Duration current() {
    if (!adaptive.enabled() || count < adaptive.minSamples()) {
      return fixed;
    }
    long[] sorted = Arrays.copyOf(recent, count);
    Arrays.sort(sorted);
    double median =
        count % 2 == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2.0;
    long ms = Math.round(median * adaptive.multiplier());
    ms = Math.max(ms, adaptive.floor().toMillis());
    ms = Math.min(ms, adaptive.ceiling().toMillis());
    return Duration.ofMillis(ms);
  }
}
