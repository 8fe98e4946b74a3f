package dev.paramserver.pserver.replication;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.pserver.replication.RegisteredBackup.Phase;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.rpc.StoppedException;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link PrimaryReplicator}'s copies of its shard to its backup: sent while the backup needs one
 * (on the replicator's copier thread), and recorded in sync in etcd once installed. The state it
 * reads and moves (the backup, its phase and generation) is the replicator's, guarded by the
 * replicator's monitor.
 */
final class BackupCopies {
  private static final Logger log = LoggerFactory.getLogger(BackupCopies.class);

  private final PrimaryReplicator r;

  BackupCopies(PrimaryReplicator r) {
    this.r = r;
  }

  /**
   * Sends the current backup copies until one is installed, while it needs one (through {@link
   * Retry}: backoff from 100 ms to 5 s; an interrupt ends it with the flag restored).
   */
  void loop() {
    Retry retry =
        new Retry(
                Duration.ofMillis(100),
                Duration.ofSeconds(5),
                () -> r.closed || !needsCopy(r.backup))
            .pausing(r.clock::sleep);
    try {
      retry.until(
          "copying shard " + r.index + " to its backup",
          attempt -> {
            RegisteredBackup b = r.backup;
            if (!needsCopy(b)) {
              return Optional.of(false);
            }
            try {
              copy(b);
              return Optional.of(true);
            } catch (OwnershipCheck.OwnershipException e) {
              if (e.verdict() == OwnershipCheck.Verdict.NOT_OWNER) {
                r.deposed(e.getMessage());
                return Optional.of(false);
              }
              log.warn(
                  "pserver {}: copy to backup {} installed but not recorded in sync, retrying: {}",
                  r.index,
                  b.address,
                  e.getMessage());
            } catch (StatusRuntimeException e) {
              if (RpcErrors.reasonOf(e) == ErrorReason.NOT_PRIMARY
                  && r.refusedByBackup(e.getMessage())) {
                return Optional.of(false);
              }
              log.warn(
                  "pserver {}: copy to backup {} failed, retrying: {}",
                  r.index,
                  b.address,
                  e.getStatus());
            } catch (IOException | RuntimeException e) {
              log.warn(
                  "pserver {}: copy to backup {} failed, retrying: {}",
                  r.index,
                  b.address,
                  e.toString());
            }
            copyFailed(b);
            return Optional.empty();
          });
    } catch (StoppedException e) {
      log.debug("pserver {}: {}", r.index, e.getMessage());
    }
  }

  /**
   * Records the backup in sync again after a push answered without it recorded it out of sync,
   * while the backup is in sync and holds that push (see {@link PrimaryReplicator#settle}); retried
   * through {@link Retry} until written, or until the backup is no longer in sync (a copy then
   * records it) or the record already names it.
   */
  void recordSynced() {
    Retry retry =
        new Retry(
                Duration.ofMillis(100),
                Duration.ofSeconds(5),
                () -> r.closed || !synced(r.backup) || r.inSync.recordedInSync())
            .pausing(r.clock::sleep);
    try {
      retry.until(
          "recording the backup of shard " + r.index + " in sync",
          attempt -> {
            RegisteredBackup b = r.backup;
            try {
              return Optional.of(r.inSync.recordInSync(b.address, () -> synced(b)));
            } catch (OwnershipCheck.OwnershipException e) {
              if (e.verdict() == OwnershipCheck.Verdict.NOT_OWNER) {
                r.deposed(e.getMessage());
                return Optional.of(false);
              }
              log.warn(
                  "pserver {}: backup {} not recorded in sync yet, retrying: {}",
                  r.index,
                  b.address,
                  e.getMessage());
              return Optional.empty();
            }
          });
    } catch (StoppedException e) {
      log.debug("pserver {}: {}", r.index, e.getMessage());
    }
  }

  /** True while {@code b} is the backup, in sync, of a replicator that is still the primary. */
  private boolean synced(RegisteredBackup b) {
    synchronized (r) {
      return b != null && r.inSync(b);
    }
  }

  /**
   * A copy that failed after its cut left the backup "copying": it needs one again, or the copy
   * loop would stop and every push wait the replication timeout for a copy that never comes.
   */
  private void copyFailed(RegisteredBackup b) {
    synchronized (r) {
      if (r.backup == b && b.phase == Phase.COPYING) {
        b.phase = Phase.NEEDS_COPY;
      }
    }
  }

  /** True while {@code b} is the backup and copy {@code generation} is the one it is sent. */
  private boolean copying(RegisteredBackup b, long generation) {
    synchronized (r) {
      return !r.closed
          && r.deposedWhy == null
          && r.backup == b
          && b.generation == generation
          && b.phase == Phase.COPYING;
    }
  }

  private boolean needsCopy(RegisteredBackup b) {
    synchronized (r) {
      return b != null && b == r.backup && b.phase == Phase.NEEDS_COPY;
    }
  }

  private void copy(RegisteredBackup b) throws IOException, InterruptedException {
    long start = System.nanoTime();
    CopyUpload.Sent sent =
        CopyUpload.cutAndSend(
            r.shard,
            r.scratch.resolve("replica-copy-" + r.index + ".tmp"),
            FillChunk.newBuilder().setIndex(r.index).setEpoch(r.epoch).setBackupLease(b.lease),
            b.async,
            r.timeout,
            r.clock,
            () -> {
              synchronized (r) {
                b.generation++;
                b.sequence = 0;
                b.phase = Phase.COPYING;
                return b.generation;
              }
            });
    // etcd records the backup in sync before any push is answered with its acknowledgement only;
    // a push answered without it meanwhile made it need a new copy, and then nothing is recorded
    boolean recorded = r.inSync.recordInSync(b.address, () -> copying(b, sent.generation()));
    synchronized (r) {
      if (recorded && copying(b, sent.generation())) {
        b.phase = Phase.SYNCED;
        r.notifyAll();
      }
    }
    sent.logInstalled(r.index, b.address, start);
  }
}
