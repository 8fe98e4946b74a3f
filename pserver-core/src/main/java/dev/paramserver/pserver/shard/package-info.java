/**
 * The shard: the parameters and optimizer state one pserver holds, and its push, pull, init,
 * snapshot and move paths. {@link dev.paramserver.pserver.shard.ParameterShard} is the door for the
 * gRPC adapter (pushes, pulls, init, status) and for {@code ShardLifecycle}, the only caller of its
 * role-changing operations (held calls, the index it carries, the backup, draining); {@link
 * dev.paramserver.pserver.shard.ShardMoves} is the door for elastic placement (the placement
 * follower, its only writer of the committed map, and the slot-move service); {@link
 * dev.paramserver.pserver.shard.ShardRestore} for checkpoint loading. Behind them, package-private:
 * {@code CallGate} (held calls, the committed placement and the rows owned under it), {@code
 * PushPath}, {@code ShardReads}, {@code ShardInit}, {@code ShardSnapshots}, {@code SlotTransfer}.
 */
package dev.paramserver.pserver.shard;
