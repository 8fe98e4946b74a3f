package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.WalRecord;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

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

  /**
   * {@link #settle} without holding a thread while the backup answers, for a push applied on a
   * transport thread: the result completes once {@code settle} would return (normally on the thread
   * that received the backup's last answer), or exceptionally with what it would throw. What needs
   * a thread to wait on (a copy in progress, a late backup, the ownership read in etcd) runs on
   * {@code blocking}, within the same replication timeout. This default runs {@code settle} on
   * {@code blocking}.
   *
   * @throws java.util.concurrent.RejectedExecutionException when {@code blocking} is stopped
   */
  default CompletableFuture<Void> settleAsync(Executor blocking) {
    return CompletableFuture.runAsync(this::settle, blocking);
  }
}
