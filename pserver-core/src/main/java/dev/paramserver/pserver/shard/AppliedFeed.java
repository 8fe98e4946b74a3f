package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.WalRecord;

/**
 * Sees every record a primary applies while it is attached ({@link ShardFeeds#attach}), in the
 * order the shard applied them, numbered with the shard's update count after each: the change
 * stream read replicas follow. Unlike a {@link RecordTap}, the record carries the sparse rows the
 * shard removed while applying it ({@code WalRecord.removals}), so a follower that applies it with
 * {@link ParameterShard#replayReplicated} holds the primary's values bit for bit.
 *
 * <p>Called under the shard's read lock and its order lock: must not block, and may keep the record
 * (it is a copy, not a view of received buffers). Not called for records a backup or a replay
 * applies.
 */
public interface AppliedFeed {
  /**
   * @param sequence the shard's update count after the record ({@link ParameterShard#step}), one
   *     more than the previous record's
   */
  void applied(long sequence, WalRecord record);
}
