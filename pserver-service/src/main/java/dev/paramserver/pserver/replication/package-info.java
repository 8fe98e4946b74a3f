/**
 * Replication of a shard ({@code paramserver.pserver.replicas = 2}): {@code Replication} is the
 * door for the registration (become primary, become backup, stop); {@code BackupCalls} is the door
 * of the ShardReplication adapter ({@code pserver.grpc.ShardReplicationGrpcService}) for the
 * primary's calls to its backup. On the primary, {@code PrimaryReplicator} streams records and
 * copies ({@code BackupCopies}, {@code CopyUpload}) and settles acknowledgements ({@code
 * SettleWaiters}, {@code InSyncRecorder}, {@code OwnershipCheck}); on the backup, {@code
 * BackupReplica} (its {@code BackupPhase}, checked moves) installs and applies them, and {@code
 * Takeover} claims the index when the primary ends.
 */
package dev.paramserver.pserver.replication;
