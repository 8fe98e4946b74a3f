package dev.paramserver.it;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.ProcessState;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.Poll;
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
   * index. On timeout the error describes every pserver's role and etcd's record.
   */
  static int awaitReplicated(LocalCluster cluster, int shard, Duration timeout) {
    int[] primary = {-1};
    try {
      Poll.until(
          timeout,
          Duration.ofMillis(200),
          () -> {
            OptionalInt p = primaryOf(cluster, shard);
            primary[0] = p.orElse(-1);
            return p.isPresent()
                && syncedBackupOf(cluster, shard).isPresent()
                && recordedInSync(cluster, shard);
          },
          "shard " + shard + " to have a primary with a synced backup");
    } catch (AssertionError e) {
      throw new AssertionError(
          "shard "
              + shard
              + " has no primary with a synced backup within "
              + timeout
              + "; "
              + describe(cluster, shard),
          e);
    }
    return primary[0];
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

  /** Every pserver process's state and replication role, and etcd's in-sync record of a shard. */
  static String describe(LocalCluster cluster, int shard) {
    StringBuilder out = new StringBuilder("pservers:");
    for (ProcessInfo p : cluster.processes()) {
      if (p.role() != Role.PSERVER) {
        continue;
      }
      out.append(" [").append(p.index()).append(' ').append(p.state());
      if (p.state() == ProcessState.RUNNING) {
        Optional<ShardStatus> s = status(p.grpcPort());
        out.append(
            s.map(
                    st ->
                        " "
                            + st.getReplicaRole()
                            + " index="
                            + st.getIndex()
                            + " backupOf="
                            + st.getBackupOf()
                            + " step="
                            + st.getStep())
                .orElse(" (no status)"));
      }
      out.append(']');
    }
    out.append("; etcd's in-sync record of shard ").append(shard).append(": ");
    try (EtcdCoordinator etcd =
        EtcdCoordinator.connect(EtcdSettings.of(cluster.etcdEndpoint(), cluster.spec().job()))) {
      out.append(
          ShardSyncRecord.read(etcd.kv(), etcd.keys(), shard)
              .map(Object::toString)
              .orElse("(none)"));
    } catch (RuntimeException e) {
      out.append("(unreadable: ").append(e).append(')');
    }
    return out.toString();
  }

  /**
   * Waits until a pserver process other than {@code old} is the primary of {@code shard}; returns
   * its index.
   */
  static int awaitNewPrimary(LocalCluster cluster, int shard, int old, Duration timeout) {
    return awaitNewPrimary(cluster, shard, old, timeout, () -> {});
  }

  /** {@link #awaitNewPrimary}, running {@code eachPoll} before each look (to keep a fault up). */
  static int awaitNewPrimary(
      LocalCluster cluster, int shard, int old, Duration timeout, Runnable eachPoll) {
    int[] found = {-1};
    Poll.until(
        timeout,
        Duration.ofMillis(200),
        () -> {
          eachPoll.run();
          found[0] = find(cluster, shard, true, old).orElse(-1);
          return found[0] >= 0;
        },
        "a pserver but process " + old + " to become the primary of shard " + shard);
    return found[0];
  }
}
