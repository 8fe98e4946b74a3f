/**
 * The shard's role: {@link dev.paramserver.pserver.role.ShardLifecycle} is the door for the
 * registration, the replication and the placement follower. It is the one owner of the {@link
 * dev.paramserver.pserver.role.ShardRole} (checked transitions), of the index this pserver claimed
 * or serves and of the shard it is the backup of; the others ask it. {@link
 * dev.paramserver.pserver.role.ShardPersistence} is what the lifecycle's callers load a claimed
 * index through (the checkpoint service implements it).
 */
package dev.paramserver.pserver.role;
