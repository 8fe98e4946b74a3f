package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.WalRecord;

/**
 * The backup of a shard, as its primary sees it (pserver replicas): every record the shard logs is
 * handed to it before the push is applied and answered.
 */
public interface Replica {

  /**
   * Sends the record to the backup and returns once the backup acknowledged it, or notes that the
   * backup needs a new copy of the shard (which will hold this record: copies are cut under the
   * shard's write lock, and this runs under its read lock). Never waits for a copy.
   *
   * @throws dev.paramserver.rpc.ServiceException NOT_PRIMARY-like SHUTTING_DOWN when this pserver
   *     is no longer the primary: the push must not be applied
   */
  void append(WalRecord record);

  /**
   * Called after a push was applied, outside the shard's locks: returns once the backup holds every
   * update applied so far (waiting for a copy in progress), or after the replication timeout.
   */
  void settle();

  /** This pserver's part in the replication, for status. */
  ReplicaRole role();
}
