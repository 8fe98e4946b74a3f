package dev.paramserver.pserver.grpc;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Counts the calls refused at a limit, by limit: metric {@code paramserver.pserver.refused} (in
 * Prometheus {@code paramserver_pserver_refused_total{reason}}), reason {@code calls}, {@code
 * bytes} or {@code queue}.
 */
public final class RefusalCounter {
  static final String METRIC = "paramserver.pserver.refused";

  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();

  public RefusalCounter(MeterRegistry registry) {
    this.registry = registry;
    for (String reason :
        new String[] {CallLimits.CALLS, CallLimits.BYTES, LimitsConfiguration.QUEUE}) {
      counter(reason);
    }
  }

  /** One call refused at {@code limit}. */
  public void refused(String limit) {
    counter(limit).increment();
  }

  /** Calls refused at {@code limit} so far. */
  public double count(String limit) {
    return counter(limit).count();
  }

  private Counter counter(String limit) {
    return counters.computeIfAbsent(
        limit,
        l ->
            Counter.builder(METRIC)
                .description("calls refused at a limit (OVERLOADED), by limit")
                .tag("reason", l)
                .register(registry));
  }
}
