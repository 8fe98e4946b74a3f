/**
 * The shard's durability in a running pserver: {@code CheckpointService} (door for the registration
 * through {@code ShardPersistence}, for the admin endpoint and for a backup installing a copy)
 * writes checkpoints on a timer, on demand and at shutdown, opens and replays the write-ahead log
 * and loads a claimed index ({@code CheckpointLoader}); {@code JobCheckpoints} cuts job-wide
 * checkpoints; {@code EtcdCheckpointPointers} keeps pserver-core's {@code CheckpointPointers} in
 * etcd.
 */
package dev.paramserver.pserver.persistence;
