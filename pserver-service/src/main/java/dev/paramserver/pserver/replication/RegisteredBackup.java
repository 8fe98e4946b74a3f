package dev.paramserver.pserver.replication;

import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;

/**
 * One backup registered for a {@link PrimaryReplicator}'s shard: its channel and where it stands.
 * The mutable fields are guarded by the replicator's monitor.
 */
final class RegisteredBackup {
  /** Where the backup stands: it needs a copy, a copy is being sent, or it holds every update. */
  enum Phase {
    NEEDS_COPY,
    COPYING,
    SYNCED
  }

  final String address;
  // The lease of the backup's ps_backup/<index> key: this registration, told with every call.
  final long lease;
  final ManagedChannel channel;
  final ShardReplicationGrpc.ShardReplicationStub async;
  final ShardReplicationGrpc.ShardReplicationFutureStub future;
  Phase phase = Phase.NEEDS_COPY;
  // The copy sent to this registration (numbered from 1 again for each registration: the backup
  // tells registrations apart by the lease).
  long generation;
  // Records sent after the current copy's cut: the last one's sequence number.
  long sequence;

  RegisteredBackup(String address, long lease, ChannelFactory channels) {
    this.address = address;
    this.lease = lease;
    this.channel = channels.forAddress(address);
    this.async = ShardReplicationGrpc.newStub(channel);
    this.future = ShardReplicationGrpc.newFutureStub(channel);
  }
}
