/**
 * The shard's change stream for read replicas: {@code ShardFeed} is the door for the push path
 * (which appends each applied record, never waiting) and for {@code ShardFollowGrpcService} (which
 * attaches one {@code Follower} per {@code ShardFollow.Follow} call and drains its bounded queue).
 */
package dev.paramserver.pserver.follow;
