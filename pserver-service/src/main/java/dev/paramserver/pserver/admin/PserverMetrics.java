package dev.paramserver.pserver.admin;

import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.registration.ShardRegistration;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.SparseTableStats;
import dev.paramserver.service.MetricBuckets;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.function.ToLongFunction;
import org.springframework.stereotype.Component;

/**
 * Domain meters of a pserver (Prometheus names {@code paramserver_pserver_*}): gauges {@code
 * paramserver.pserver.index} (the claimed index, -1 while none; a gauge rather than a common tag
 * because the index is claimed after the meters are registered and can change when the lease is
 * lost), {@code .step} (update count), {@code .parameter.bytes}, {@code .checkpoint.step}, {@code
 * .checkpoint.age} (seconds since the newest checkpoint was written or loaded; before the first,
 * since the shard was initialised; NaN while it is not), {@code .checkpoint.duration} (seconds the
 * last checkpoint took to write; 0 from initialisation to the first checkpoint) and the timer
 * {@code paramserver.pserver.checkpoint.write} (every checkpoint write, with histogram buckets).
 * Per sparse table (tag {@code table}): gauges {@code paramserver.pserver.sparse.rows} and {@code
 * .sparse.bytes}, counters {@code .sparse.evictions} (rows dropped by the cap or expired) and
 * {@code .sparse.admissions.refused} (row pushes dropped below the admission threshold); NaN once
 * the table is no longer defined.
 */
@Component
public final class PserverMetrics {

  public PserverMetrics(
      MeterRegistry registry,
      ParameterShard shard,
      CheckpointService checkpoints,
      ShardRegistration registration) {
    Gauge.builder("paramserver.pserver.index", registration, ShardRegistration::index)
        .description("Index this pserver claimed in etcd (ps/<index>), -1 while it holds none")
        .register(registry);
    Timer checkpointWrite =
        Timer.builder("paramserver.pserver.checkpoint.write")
            .description("Time to snapshot the shard and write a checkpoint")
            .serviceLevelObjectives(MetricBuckets.latency())
            .register(registry);
    checkpoints.onWritten(checkpointWrite::record);
    Gauge.builder("paramserver.pserver.step", shard, ParameterShard::step)
        .description("Updates applied to the shard")
        .register(registry);
    Gauge.builder("paramserver.pserver.parameter.bytes", shard, s -> s.status().getParameterBytes())
        .description("Bytes of parameter values held (dense blocks and sparse rows)")
        .baseUnit("bytes")
        .register(registry);
    Gauge.builder(
            "paramserver.pserver.checkpoint.step",
            checkpoints,
            c -> c.last() == null ? Double.NaN : c.last().step())
        .description("Step of the newest checkpoint")
        .register(registry);
    Gauge.builder(
            "paramserver.pserver.checkpoint.age",
            checkpoints,
            c -> c.ageSeconds(System.currentTimeMillis()))
        .description(
            "Seconds since the newest checkpoint was written (before the first: since the shard"
                + " was initialised)")
        .baseUnit("seconds")
        .register(registry);
    Gauge.builder(
            "paramserver.pserver.checkpoint.duration",
            checkpoints,
            CheckpointService::lastWriteSeconds)
        .description("Seconds the last checkpoint took to write (0 for a loaded one)")
        .baseUnit("seconds")
        .register(registry);
    shard.events().onTableDefined(name -> registerTable(registry, shard, name));
    shard.sparseTables().forEach(t -> registerTable(registry, shard, t.name()));
  }

  /** Registers the meters of a sparse table; registering a table again is a no-op. */
  private static void registerTable(MeterRegistry registry, ParameterShard shard, String table) {
    Gauge.builder(
            "paramserver.pserver.sparse.rows", shard, s -> stat(s, table, SparseTableStats::rows))
        .description("Rows held by a sparse table")
        .tag("table", table)
        .register(registry);
    Gauge.builder(
            "paramserver.pserver.sparse.bytes", shard, s -> stat(s, table, SparseTableStats::bytes))
        .description("Bytes of storage of a sparse table (values, optimizer state, ids, index)")
        .baseUnit("bytes")
        .tag("table", table)
        .register(registry);
    FunctionCounter.builder(
            "paramserver.pserver.sparse.evictions",
            shard,
            s -> stat(s, table, SparseTableStats::evictions))
        .description("Rows of a sparse table dropped by its cap or expired")
        .tag("table", table)
        .register(registry);
    FunctionCounter.builder(
            "paramserver.pserver.sparse.admissions.refused",
            shard,
            s -> stat(s, table, SparseTableStats::admissionsRefused))
        .description("Row pushes dropped because the id was below the admission threshold")
        .tag("table", table)
        .register(registry);
  }

  private static double stat(
      ParameterShard shard, String table, ToLongFunction<SparseTableStats> field) {
    return shard.sparseTable(table).map(t -> (double) field.applyAsLong(t)).orElse(Double.NaN);
  }
}
