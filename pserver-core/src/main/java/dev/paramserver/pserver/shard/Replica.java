package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.WalRecord;

/**
 * The backup of a shard, as its primary sees it (pserver replicas): every record the shard logs is
 * handed to it before the push is applied and answered.
 */
public interface Replica {

  /**
   * Sends the record to the backup without waiting for its answer, or notes that the backup needs a
   * new copy of the shard (which will hold this record: copies are cut under the shard's write
   * lock, and this runs under its read lock). Never waits for a copy.
   */
  void append(WalRecord record);

  /**
   * Called after a push was applied, outside the shard's locks: returns once the backup holds every
   * update applied so far (waiting for a copy in progress), or after the replication timeout.
   *
   * @throws dev.paramserver.rpc.ServiceException SHUTTING_DOWN when this pserver is no longer the
   *     primary: the push must not be acknowledged
   */
  void settle();
}
