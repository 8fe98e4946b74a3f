package dev.paramserver.service;

import java.time.Duration;

/**
 * Histogram bucket bounds shared by the services' timers, so that {@code histogram_quantile} works
 * on them and latencies of different meters line up.
 */
public final class MetricBuckets {
  private static final long[] LATENCY_MICROS = {
    10,
    50,
    100,
    300,
    600,
    800,
    1_000,
    2_000,
    3_000,
    4_000,
    5_000,
    6_000,
    8_000,
    10_000,
    13_000,
    16_000,
    20_000,
    25_000,
    30_000,
    40_000,
    50_000,
    65_000,
    80_000,
    100_000,
    130_000,
    160_000,
    200_000,
    250_000,
    300_000,
    400_000,
    500_000,
    650_000,
    800_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000
  };

  private MetricBuckets() {}

  /**
   * The latency bounds of grpc-java's call histograms, kept from the services' earlier gRPC starter
   * (10 µs to 100 s; {@code grpc_server_call_duration_seconds}); a new array each call, for {@code
   * Timer.Builder.serviceLevelObjectives}.
   */
  public static Duration[] latency() {
    Duration[] d = new Duration[LATENCY_MICROS.length];
    for (int i = 0; i < d.length; i++) {
      d[i] = Duration.ofNanos(LATENCY_MICROS[i] * 1000);
    }
    return d;
  }
}
