package dev.paramserver.service;

import dev.paramserver.etcd.CallObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * etcd call latency as the timer {@code paramserver.etcd.call} (Prometheus: {@code
 * paramserver_etcd_call_seconds_bucket}), tagged {@code operation} (get, get-prefix, put, delete,
 * create-if-absent, compare-and-swap, commit, lease-grant) and {@code outcome} (success|failure),
 * with buckets from 1 ms to 10 s.
 */
final class EtcdCallMetrics implements CallObserver {
  static final String NAME = "paramserver.etcd.call";

  private static final Duration[] BUCKETS = {
    Duration.ofMillis(1),
    Duration.ofMillis(2),
    Duration.ofMillis(5),
    Duration.ofMillis(10),
    Duration.ofMillis(20),
    Duration.ofMillis(50),
    Duration.ofMillis(100),
    Duration.ofMillis(200),
    Duration.ofMillis(500),
    Duration.ofSeconds(1),
    Duration.ofSeconds(2),
    Duration.ofSeconds(5),
    Duration.ofSeconds(10)
  };

  private final MeterRegistry registry;
  // built once per operation and outcome: not on every call
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();

  EtcdCallMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void onCall(String operation, long nanos, boolean success) {
    String outcome = success ? "success" : "failure";
    timers
        .computeIfAbsent(
            operation + '\u0000' + outcome,
            k ->
                Timer.builder(NAME)
                    .description("Time an etcd request took, as this service waited for it")
                    .tag("operation", operation)
                    .tag("outcome", outcome)
                    .serviceLevelObjectives(BUCKETS)
                    .register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
  }
}
