package dev.paramserver.pserver.replication;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.pserver.replication.OwnershipCheck.OwnershipException;
import dev.paramserver.pserver.replication.OwnershipCheck.Verdict;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The primary's writes of its shard's in-sync record ({@link ShardSyncRecord}, {@code
 * ps_sync/<index>}), each fenced on the primary's own {@code ps/<index>} (its create revision is
 * the epoch): once the key is gone or another's, no write of this primary lands, so a backup that
 * reads the record after the key vanished reads the primary's last word.
 *
 * <p>Writes are serialised by this object's monitor (only these etcd calls run under it), so an "in
 * sync" write never lands after an "out of sync" one it raced with: a push answered without the
 * backup is answered only after {@link #recordOutOfSync} returned, and {@link #recordInSync} writes
 * only while its caller's check (the backup's copy installed, nothing answered without it since the
 * copy was cut) holds under the same monitor.
 */
final class InSyncRecorder {
  private static final Logger log = LoggerFactory.getLogger(InSyncRecorder.class);

  private final KeyValueStore kv;
  private final String primaryKey;
  private final String syncKey;
  private final long epoch;
  private final int index;
  private final ReplicationClock clock;
  // Guarded by this: what the record says now (as far as this primary wrote it).
  private boolean recordedInSync;
  private String recordedBackup = "";

  InSyncRecorder(
      KeyValueStore kv,
      String primaryKey,
      String syncKey,
      long epoch,
      int index,
      ReplicationClock clock) {
    this.clock = clock;
    this.kv = kv;
    this.primaryKey = primaryKey;
    this.syncKey = syncKey;
    this.epoch = epoch;
    this.index = index;
  }

  /**
   * Records this primary's epoch with no backup in sync (before it serves).
   *
   * @throws OwnershipException NOT_OWNER when {@code ps/<index>} is not this primary's any more,
   *     UNKNOWN when etcd did not answer
   */
  synchronized void start() {
    write(ShardSyncRecord.outOfSync(epoch, clock.currentTimeMillis()));
    recordedInSync = false;
  }

  /**
   * Records the backup at {@code backup} in sync, if {@code stillInSync} holds (checked under this
   * monitor, before the write).
   *
   * @return false when the check failed (nothing written)
   * @throws OwnershipException as {@link #start}
   */
  synchronized boolean recordInSync(String backup, BooleanSupplier stillInSync) {
    if (!stillInSync.getAsBoolean()) {
      return false;
    }
    write(ShardSyncRecord.inSync(epoch, backup, clock.currentTimeMillis()));
    recordedInSync = true;
    recordedBackup = backup;
    log.info("pserver {}: etcd records backup {} in sync (epoch {})", index, backup, epoch);
    return true;
  }

  /**
   * Makes sure the record says no backup is in sync (one write when it said one was; none
   * otherwise): called before a push is answered without the backup.
   *
   * @return true when it wrote (the record named a backup in sync until now)
   * @throws OwnershipException as {@link #start}: the push must not be acknowledged
   */
  synchronized boolean recordOutOfSync(String why) {
    if (!recordedInSync) {
      return false;
    }
    write(ShardSyncRecord.outOfSync(epoch, clock.currentTimeMillis()));
    recordedInSync = false;
    log.warn(
        "pserver {}: etcd records its backup out of sync (epoch {}): {}; the backup will not take"
            + " the shard over without this pserver's log",
        index,
        epoch,
        why);
    return true;
  }

  /**
   * Records that this primary stopped cleanly: its last checkpoint holds every update it
   * acknowledged, so the shard need not wait for its log. Best effort (a failure leaves the shard
   * waiting for this log, which the restart finds).
   */
  synchronized void recordCleanStop() {
    ShardSyncRecord base =
        recordedInSync
            ? ShardSyncRecord.inSync(epoch, recordedBackup, clock.currentTimeMillis())
            : ShardSyncRecord.outOfSync(epoch, clock.currentTimeMillis());
    try {
      write(base.stoppedCleanly(clock.currentTimeMillis()));
      log.info("pserver {}: etcd records that it stopped cleanly (epoch {})", index, epoch);
    } catch (OwnershipException e) {
      log.warn("pserver {}: could not record its clean stop: {}", index, e.getMessage());
    }
  }

  /** What this primary last wrote (for status and tests). */
  synchronized boolean recordedInSync() {
    return recordedInSync;
  }

  private void write(ShardSyncRecord record) {
    boolean written;
    try {
      written = kv.commitIfHeld(primaryKey, epoch, Map.of(syncKey, record.encode()), List.of());
    } catch (RuntimeException e) {
      throw new OwnershipException(
          Verdict.UNKNOWN,
          syncKey
              + ": etcd did not record the backup's state ("
              + e.getMessage()
              + "): the push is not acknowledged; retry");
    }
    if (!written) {
      throw new OwnershipException(
          Verdict.NOT_OWNER,
          primaryKey
              + " is no longer this pserver's (it ended or another primary holds it): the push is"
              + " not acknowledged; retry on the primary registered in etcd");
    }
  }
}
