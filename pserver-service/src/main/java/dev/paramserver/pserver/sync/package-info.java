/**
 * The synchronous training modes' view of the job: {@code EtcdTrainerMembership} (door for the
 * shard's {@code SyncAggregator}, as its {@code TrainerMembership}) follows the live trainers in
 * etcd.
 */
package dev.paramserver.pserver.sync;
