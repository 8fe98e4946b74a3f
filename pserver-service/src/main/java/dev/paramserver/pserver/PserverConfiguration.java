package dev.paramserver.pserver;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.pserver.follow.ShardFeed;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.AppliedWindow;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.pserver.shard.SyncAggregator;
import dev.paramserver.pserver.sparse.EvictionPolicy;
import dev.paramserver.pserver.sparse.SparseBudget;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.pserver.sync.EtcdTrainerMembership;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/** The pserver's domain beans. */
@Configuration(proxyBeanMethods = false)
public class PserverConfiguration {
  /** Flow-control window of the gRPC server: a 1 MiB block fits many times over. */
  static final int FLOW_CONTROL_WINDOW = 16 * 1024 * 1024;

  /**
   * Runs the gRPC handlers on the transport threads: asynchronous pushes and pulls never block
   * (per-block locks held for one block's update), and the synchronous modes' waits are handed to
   * the blocking executor by the service. Saves a thread hop per call; the window lets a large
   * block stream without waiting for window updates.
   */
  @Bean
  ServerBuilderCustomizer<NettyServerBuilder> pserverGrpcServerTuning() {
    return builder -> builder.directExecutor().flowControlWindow(FLOW_CONTROL_WINDOW);
  }

  @Bean
  ParameterShard parameterShard(PserverProperties properties) {
    ParameterShard shard =
        new ParameterShard(properties.rejectNonFinite(), sparseSettings(properties.sparse()));
    AppliedWindow.apply(
        shard, properties.limits().appliedWindow(), properties.limits().appliedIdentities());
    return shard;
  }

  /** The shard's side of elastic placement (slot moves), used by the placement package. */
  @Bean
  ShardMoves shardMoves(ParameterShard shard) {
    return new ShardMoves(shard);
  }

  /** The shard's change stream for read replicas (ShardFollow), attached at the first follower. */
  @Bean
  ShardFeed shardFeed(ParameterShard shard) {
    return new ShardFeed(shard, System::currentTimeMillis);
  }

  /**
   * The one owner of the shard's role. Until the index is claimed (and its checkpoint loaded) calls
   * are answered UNAVAILABLE.
   */
  @Bean
  ShardTraffic shardTraffic() {
    return new ShardTraffic();
  }

  @Bean
  ShardLifecycle shardLifecycle(ParameterShard shard) {
    return new ShardLifecycle(shard);
  }

  /** The domain settings of the sparse tables; a 0 cap means none. */
  static SparseSettings sparseSettings(PserverProperties.Sparse p) {
    Map<String, SparseSettings.TableCap> tables = new HashMap<>();
    p.tables()
        .forEach(
            (name, cap) ->
                tables.put(
                    name,
                    new SparseSettings.TableCap(
                        orUnlimited(cap.maxRows()), orUnlimited(cap.maxBytes().toBytes()))));
    EvictionPolicy policy =
        switch (p.eviction()) {
          case LFU -> EvictionPolicy.lfu(p.lfuHalfLife());
          case TTL -> EvictionPolicy.ttl(p.ttl());
        };
    long maxBytes = p.maxBytes().toBytes();
    return new SparseSettings(
        orUnlimited(p.maxRows()),
        tables,
        maxBytes > 0 ? new SparseBudget(maxBytes) : null,
        policy,
        p.evictionSample(),
        p.admissionThreshold(),
        p.admissionSketchWidth());
  }

  private static long orUnlimited(long cap) {
    return cap > 0 ? cap : Long.MAX_VALUE;
  }

  /** The live trainers, from etcd (synchronous modes). */
  @Bean(destroyMethod = "close")
  EtcdTrainerMembership trainerMembership(
      Coordinator coordinator, @Value("${paramserver.etcd.lease-ttl:10s}") Duration leaseTtl) {
    return new EtcdTrainerMembership(coordinator, leaseTtl.dividedBy(2));
  }

  /** The synchronous modes' barrier, attached to the shard. */
  @Bean
  SyncAggregator syncAggregator(
      ParameterShard shard, EtcdTrainerMembership membership, PserverProperties properties) {
    SyncAggregator sync = new SyncAggregator(shard, membership, properties.syncTimeout());
    shard.attachSync(sync);
    return sync;
  }
}
