package dev.paramserver.it;

import dev.paramserver.coordination.EtcdCoordinator;
import dev.paramserver.coordination.EtcdSettings;
import dev.paramserver.coordination.ShardSyncRecord;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.ProcessState;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.Channels;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;

/** The replication roles of a cluster's pserver processes, read from their GetShardStatus. */
final class ShardRoles {
  private ShardRoles() {}

  /** The status of the pserver listening on {@code grpcPort}, or empty if it does not answer. */
  static Optional<ShardStatus> status(int grpcPort) {
    ManagedChannel channel = Channels.forAddress("127.0.0.1:" + grpcPort);
    try {
      return Optional.of(
          ParameterServerGrpc.newBlockingStub(channel)
              .withDeadlineAfter(3, TimeUnit.SECONDS)
              .getShardStatus(GetShardStatusRequest.getDefaultInstance()));
    } catch (RuntimeException e) {
      return Optional.empty();
    } finally {
      Channels.close(channel);
    }
  }

  /** The process index of the running pserver that is the primary of {@code shard}, if any. */
  static OptionalInt primaryOf(LocalCluster cluster, int shard) {
    return find(cluster, shard, true, -1);
  }

  /** The process index of the running pserver that is the synced backup of {@code shard}. */
  static OptionalInt syncedBackupOf(LocalCluster cluster, int shard) {
    return find(cluster, shard, false, -1);
  }

  private static OptionalInt find(LocalCluster cluster, int shard, boolean primary, int exclude) {
    for (ProcessInfo p : cluster.processes()) {
      if (p.role() != Role.PSERVER || p.state() != ProcessState.RUNNING || p.index() == exclude) {
        continue;
      }
      Optional<ShardStatus> s = status(p.grpcPort());
      if (s.isEmpty()) {
        continue;
      }
      ShardStatus st = s.get();
      boolean match =
          primary
              ? st.getReplicaRole() == ReplicaRole.REPLICA_PRIMARY && st.getIndex() == shard
              : st.getReplicaRole() == ReplicaRole.REPLICA_BACKUP_SYNCED
                  && st.getBackupOf() == shard;
      if (match) {
        return OptionalInt.of(p.index());
      }
    }
    return OptionalInt.empty();
  }

  /**
   * Waits until {@code shard} has a primary and a synced backup, and etcd records that backup in
   * sync (without the record the backup would not take the shard over); returns the primary's
   * index.
   */
  static int awaitReplicated(LocalCluster cluster, int shard, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      OptionalInt primary = primaryOf(cluster, shard);
      if (primary.isPresent()
          && syncedBackupOf(cluster, shard).isPresent()
          && recordedInSync(cluster, shard)) {
        return primary.getAsInt();
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "shard " + shard + " has no primary with a synced backup within " + timeout);
      }
      Thread.sleep(200);
    }
  }

  /** True when etcd's in-sync record of {@code shard} names a backup in sync. */
  static boolean recordedInSync(LocalCluster cluster, int shard) {
    try (EtcdCoordinator etcd =
        EtcdCoordinator.connect(EtcdSettings.of(cluster.etcdEndpoint(), cluster.spec().job()))) {
      return ShardSyncRecord.read(etcd.kv(), etcd.keys(), shard)
          .map(ShardSyncRecord::inSync)
          .orElse(false);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * Waits until a pserver process other than {@code old} is the primary of {@code shard}; returns
   * its index.
   */
  static int awaitNewPrimary(LocalCluster cluster, int shard, int old, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      OptionalInt primary = find(cluster, shard, true, old);
      if (primary.isPresent()) {
        return primary.getAsInt();
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "no pserver but process "
                + old
                + " became primary of shard "
                + shard
                + " within "
                + timeout);
      }
      Thread.sleep(200);
    }
  }
}
