package dev.paramserver.serving.admin;

import dev.paramserver.serving.replica.ServedVersion;
import dev.paramserver.serving.replica.ServingReplica;
import dev.paramserver.serving.replica.ShardFollower;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.List;
import org.springframework.stereotype.Component;

/**
 * The replica's metrics: {@code paramserver_serving_version} (the version number served, 0 while
 * loading), and per shard {@code paramserver_serving_shard_sequence}, {@code
 * paramserver_serving_shard_lag_ms} (from the primary applying the last record to this replica
 * serving it), {@code paramserver_serving_shard_copies} and {@code
 * paramserver_serving_shard_connected}.
 */
@Component
public final class ServingMetrics implements MeterBinder {
  private final ServingReplica replica;

  public ServingMetrics(ServingReplica replica) {
    this.replica = replica;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    Gauge.builder(
            "paramserver.serving.version",
            replica,
            r -> {
              ServedVersion v = r.model().version();
              return v == null ? 0 : v.number();
            })
        .description("the version number this replica serves (0 while loading)")
        .register(registry);
    Gauge.builder("paramserver.serving.placement.epoch", replica, r -> r.model().placementEpoch())
        .description("the committed placement epoch the served version routes by")
        .register(registry);
    for (int i = 0; i < replica.model().shardCount(); i++) {
      int index = i;
      String shard = Integer.toString(i);
      Gauge.builder("paramserver.serving.shard.sequence", replica, r -> at(r, index).sequence())
          .description("the last sequence of the shard this replica applied")
          .tag("shard", shard)
          .register(registry);
      Gauge.builder("paramserver.serving.shard.lag.ms", replica, r -> at(r, index).lagMs())
          .description("ms from the primary applying the last record to this replica serving it")
          .tag("shard", shard)
          .register(registry);
      Gauge.builder("paramserver.serving.shard.copies", replica, r -> at(r, index).copies())
          .description("copies of the shard installed (first load and reloads)")
          .tag("shard", shard)
          .register(registry);
      Gauge.builder(
              "paramserver.serving.shard.connected", replica, r -> at(r, index).connected() ? 1 : 0)
          .description("1 while the shard's change stream is open")
          .tag("shard", shard)
          .register(registry);
    }
  }

  private static ShardFollower.Status at(ServingReplica r, int index) {
    List<ShardFollower.Status> all = r.shards();
    // a shrunk placement follows fewer shards than at start
    return index < all.size()
        ? all.get(index)
        : new ShardFollower.Status(index, "", 0, 0, false, 0, 0, 0, "");
  }
}
