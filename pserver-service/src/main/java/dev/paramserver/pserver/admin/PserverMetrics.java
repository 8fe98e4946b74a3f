package dev.paramserver.pserver.admin;

import dev.paramserver.pserver.checkpoint.CheckpointService;
import dev.paramserver.pserver.shard.ParameterShard;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.stereotype.Component;

/**
 * Domain gauges of a pserver: {@code pserver.step} (update count), {@code pserver.parameter.bytes},
 * {@code pserver.checkpoint.step}, {@code pserver.checkpoint.age} (seconds since the newest
 * checkpoint was written or loaded; NaN before the first) and {@code pserver.checkpoint.duration}
 * (seconds the last checkpoint took to write).
 */
@Component
public final class PserverMetrics {

  public PserverMetrics(
      MeterRegistry registry, ParameterShard shard, CheckpointService checkpoints) {
    Gauge.builder("pserver.step", shard, ParameterShard::step)
        .description("Updates applied to the shard")
        .register(registry);
    Gauge.builder("pserver.parameter.bytes", shard, s -> s.status().getParameterBytes())
        .description("Bytes of parameter values held (dense blocks and sparse rows)")
        .baseUnit("bytes")
        .register(registry);
    Gauge.builder(
            "pserver.checkpoint.step",
            checkpoints,
            c -> c.last() == null ? Double.NaN : c.last().step())
        .description("Step of the newest checkpoint")
        .register(registry);
    Gauge.builder(
            "pserver.checkpoint.age",
            checkpoints,
            c ->
                c.last() == null
                    ? Double.NaN
                    : (System.currentTimeMillis() - c.last().timestampMs()) / 1000.0)
        .description("Seconds since the newest checkpoint was written")
        .baseUnit("seconds")
        .register(registry);
    Gauge.builder(
            "pserver.checkpoint.duration",
            checkpoints,
            c -> c.last() == null ? Double.NaN : c.last().writeSeconds())
        .description("Seconds the last checkpoint took to write (0 for a loaded one)")
        .baseUnit("seconds")
        .register(registry);
  }
}
