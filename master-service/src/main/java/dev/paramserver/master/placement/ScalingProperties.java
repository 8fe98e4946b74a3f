package dev.paramserver.master.placement;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * How the leader master scales a live job ({@code psctl scale}, docs/explanation/elastic.md).
 *
 * @param slotsPerMove the most row slots one move carries (default 512 of at least 16384): the
 *     smaller, the shorter each move's stall, the more moves
 * @param moveTimeout the longest one move (copy, records, hand-over) may take before it is rolled
 *     back (default 2m)
 * @param registrationTimeout how long a grow waits for the new pservers to register (default 10m)
 * @param retryDelay the pause after a failed move before it is planned again (default 2s)
 * @param drainTime after a shrink, how long an emptied pserver keeps answering (MOVED to a request
 *     planned by an older map, a duplicate to a push it applied whose answer was lost) before it is
 *     asked to shut down (default 15s: longer than a trainer's call timeout and first retry)
 * @param pollInterval how often the coordinator looks in etcd whether a new pserver registered, an
 *     emptied one deregistered, or a drain is over (default 500ms)
 * @param shutdownTimeout after a shrink, how long the coordinator waits for an emptied pserver it
 *     asked to shut down to deregister before it goes on (default 2m)
 */
@Validated
@ConfigurationProperties("paramserver.master.scaling")
public record ScalingProperties(
    @DefaultValue("512") @Min(1) @Max(1 << 20) int slotsPerMove,
    @DefaultValue("2m") @NotNull Duration moveTimeout,
    @DefaultValue("10m") @NotNull Duration registrationTimeout,
    @DefaultValue("2s") @NotNull Duration retryDelay,
    @DefaultValue("15s") @NotNull Duration drainTime,
    @DefaultValue("500ms") @NotNull Duration pollInterval,
    @DefaultValue("2m") @NotNull Duration shutdownTimeout) {

  public ScalingProperties {
    if (retryDelay != null && (retryDelay.isNegative() || retryDelay.isZero())) {
      throw new IllegalArgumentException(
          "paramserver.master.scaling.retry-delay must be positive, got " + retryDelay);
    }
    if (pollInterval != null && (pollInterval.isNegative() || pollInterval.isZero())) {
      throw new IllegalArgumentException(
          "paramserver.master.scaling.poll-interval must be positive, got " + pollInterval);
    }
  }

  /** The defaults, for tests. */
  public static ScalingProperties defaults() {
    return new ScalingProperties(
        512,
        Duration.ofMinutes(2),
        Duration.ofMinutes(10),
        Duration.ofSeconds(2),
        Duration.ofSeconds(15),
        Duration.ofMillis(500),
        Duration.ofMinutes(2));
  }
}
