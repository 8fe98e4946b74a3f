package dev.paramserver.pserver.replication;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The backup's side of a shard's replication: installs the primary's copies of the shard and
 * applies the records that follow them, checking each call's epoch against the create revision of
 * {@code ps/<index>}, which it follows in etcd. When that key vanishes (the primary's lease ended)
 * it asks for a takeover, and again when an operator forces one in the shard's in-sync record
 * ({@code ps_sync/<index>}, see {@link Takeover}).
 */
final class BackupReplica implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(BackupReplica.class);

  private final ParameterShard shard;
  private final ShardLifecycle lifecycle;
  private final int index;
  private final KeyValueStore kv;
  private final String primaryKey;
  private final String syncKey;
  // The lease of this backup's ps_backup/<index> key: its registration, which calls must be for.
  private final long registration;
  private final Duration timeout;
  private final ReplicationClock clock;
  private final Consumer<BackupReplica> onPrimaryGone;
  // Guarded by this: the primary's epoch (0: none), the copy installed (-1: none), the sequence
  // number of the last record applied after it, where this backup stands with that primary and
  // what it is doing to the shard's content.
  private long epoch;
  private long installed = -1;
  private long appliedSequence;
  private BackupPhase phase = BackupPhase.FILLING;
  private BackupWork work = BackupWork.IDLE;
  private AutoCloseable watch;
  private AutoCloseable syncWatch;

  BackupReplica(
      ParameterShard shard,
      ShardLifecycle lifecycle,
      int index,
      KeyValueStore kv,
      String primaryKey,
      String syncKey,
      long registration,
      Duration timeout,
      Consumer<BackupReplica> onPrimaryGone) {
    this(
        shard,
        lifecycle,
        index,
        kv,
        primaryKey,
        syncKey,
        registration,
        timeout,
        onPrimaryGone,
        ReplicationClock.SYSTEM);
  }

  /** As above, on {@code clock}'s time and waits. */
  BackupReplica(
      ParameterShard shard,
      ShardLifecycle lifecycle,
      int index,
      KeyValueStore kv,
      String primaryKey,
      String syncKey,
      long registration,
      Duration timeout,
      Consumer<BackupReplica> onPrimaryGone,
      ReplicationClock clock) {
    this.clock = clock;
    this.shard = shard;
    this.lifecycle = lifecycle;
    this.index = index;
    this.kv = kv;
    this.primaryKey = primaryKey;
    this.syncKey = syncKey;
    this.registration = registration;
    this.timeout = timeout;
    this.onPrimaryGone = onPrimaryGone;
  }

  int index() {
    return index;
  }

  void start() {
    syncWatch =
        kv.watchPrefix(
            syncKey,
            e -> {
              if (e.keyValue().key().equals(syncKey)
                  && e.type() == KeyValueStore.WatchEvent.Type.PUT
                  && forced(e.keyValue().value())) {
                // an operator forced a takeover (written only while no primary holds the shard)
                onPrimaryGone.accept(this);
              }
            });
    watch =
        kv.watchPrefix(
            primaryKey,
            e -> {
              if (!e.keyValue().key().equals(primaryKey)) {
                return;
              }
              if (e.type() == KeyValueStore.WatchEvent.Type.PUT) {
                primary(e.keyValue().createRevision());
              } else {
                // What this backup holds stays: it is what it takes over with.
                onPrimaryGone.accept(this);
              }
            });
    Optional<KeyValueStore.KeyValue> now = kv.get(primaryKey);
    if (now.isPresent()) {
      primary(now.get().createRevision());
    } else {
      onPrimaryGone.accept(this);
    }
  }

  private static boolean forced(byte[] record) {
    try {
      return ShardSyncRecord.decode(record).isForced();
    } catch (IllegalArgumentException e) {
      log.warn("unreadable shard sync record: {}", e.getMessage());
      return false;
    }
  }

  /** The epoch of the primary this backup follows (0: none seen). */
  synchronized long epoch() {
    return epoch;
  }

  private synchronized void primary(long createRevision) {
    if (createRevision != epoch && !phase.takingOver()) {
      log.info("backup of shard {}: primary epoch {} -> {}", index, epoch, createRevision);
      epoch = createRevision;
      installed = -1;
      appliedSequence = 0;
      setSynced(false);
      notifyAll();
    }
  }

  /**
   * Starts a takeover: from now on a new registration under {@code ps/<index>} (this backup's own
   * claim) does not reset what it holds.
   *
   * @return whether it holds every update the ended primary acknowledged
   */
  synchronized boolean beginTakeover() {
    moveTo(phase.withTakeover(true));
    return phase.synced();
  }

  /** The claim failed: another pserver is primary; follow it again. */
  void abortTakeover() {
    synchronized (this) {
      moveTo(phase.withTakeover(false));
    }
    kv.get(primaryKey).ifPresent(k -> primary(k.createRevision()));
  }

  /** True when this backup holds every update the primary acknowledged. */
  synchronized boolean synced() {
    return phase.synced();
  }

  /** Where this backup stands with its primary. */
  synchronized BackupPhase phase() {
    return phase;
  }

  // Guarded by this.
  private void moveTo(BackupPhase next) {
    if (next == phase) {
      return;
    }
    if (!phase.canMoveTo(next)) {
      throw new IllegalStateException(
          "backup of shard " + index + " cannot move from " + phase + " to " + next);
    }
    phase = next;
  }

  // Guarded by this.
  private void workOn(BackupWork next) {
    if (!work.canMoveTo(next)) {
      throw new IllegalStateException(
          "backup of shard " + index + " cannot go from " + work + " to " + next);
    }
    work = next;
  }

  // Guarded by this.
  private boolean closed() {
    return phase == BackupPhase.CLOSED;
  }

  /**
   * Fails unless {@code callEpoch} is the current primary's (re-read from etcd if newer) and the
   * call is for this registration of the backup ({@code callLease}, 0: not told).
   */
  private synchronized void checkEpoch(long callEpoch, long callLease) {
    if (closed()) {
      throw new ServiceException(
          ErrorReason.NOT_PRIMARY, "this pserver is no longer a backup of shard " + index);
    }
    if (callLease != 0 && callLease != registration) {
      // Copies are numbered per registration: a late call of an earlier one (before this backup
      // lost its lease or restarted) could carry the number of this one's copy. Not NOT_PRIMARY:
      // the caller may well be the primary, its view of the registration behind.
      throw new ServiceException(
          ErrorReason.SHUTTING_DOWN,
          "the call is for an earlier registration of this backup of shard "
              + index
              + ": it registered again; retry with the registration in etcd");
    }
    if (callEpoch > epoch) {
      // The watch may lag behind a new primary's registration.
      kv.get(primaryKey).ifPresent(k -> primary(k.createRevision()));
    }
    if (callEpoch != epoch) {
      // the current epoch is not told: it is the fencing token a forged Fill would need
      throw new ServiceException(
          ErrorReason.NOT_PRIMARY,
          "the caller is not the current primary of shard "
              + index
              + (epoch == 0 ? " (none registered)" : "")
              + ": find the primary in etcd");
    }
  }

  /**
   * True when {@code request} can be answered without waiting: for the copy it follows, or for the
   * record before it in the primary's log.
   */
  synchronized boolean ready(ReplicateRequest request) {
    return !closed() && !mustWait(request);
  }

  // Guarded by this.
  private boolean mustWait(ReplicateRequest request) {
    long generation = request.getGeneration();
    long sequence = request.getSequence();
    return work != BackupWork.IDLE
        || installed < generation
        || (installed == generation
            && phase.synced()
            && sequence > 0
            && appliedSequence < sequence - 1);
  }

  /**
   * Applies one record after the copy it follows and after the record before it in the primary's
   * log (waiting for them, bounded): the backup applies a copy's records in the primary's log
   * order, so it ends with the primary's values bit for bit.
   */
  ReplicateResponse replicate(ReplicateRequest request) throws InterruptedException {
    long deadline = clock.nanoTime() + timeout.toNanos();
    synchronized (this) {
      checkEpoch(request.getEpoch(), request.getBackupLease());
      while (mustWait(request) && !closed()) {
        long left = deadline - clock.nanoTime();
        if (left <= 0 || epoch != request.getEpoch()) {
          return ReplicateResponse.newBuilder().setNeedFill(true).build();
        }
        clock.timedWait(this, left);
      }
      checkEpoch(request.getEpoch(), request.getBackupLease());
      if (installed > request.getGeneration()) {
        return ReplicateResponse.getDefaultInstance(); // the newer copy holds it
      }
      if (!phase.synced()) {
        return ReplicateResponse.newBuilder().setNeedFill(true).build();
      }
      long sequence = request.getSequence();
      if (sequence > 0 && sequence <= appliedSequence) {
        return ReplicateResponse.getDefaultInstance(); // applied already (a repeated call)
      }
      // One record at a time; a copy is not installed meanwhile.
      workOn(BackupWork.APPLYING);
    }
    try {
      return apply(request.getRecord());
    } finally {
      synchronized (this) {
        workOn(BackupWork.IDLE);
        appliedSequence = Math.max(appliedSequence, request.getSequence());
        notifyAll();
      }
    }
  }

  private ReplicateResponse apply(WalRecord record) {
    if (record.getPushesCount() > 0 && !record.getInitId().equals(shard.initId())) {
      markUnsynced();
      return ReplicateResponse.newBuilder().setNeedFill(true).build();
    }
    try {
      shard.replayReplicated(record);
    } catch (RuntimeException e) {
      log.error("backup of shard {}: a record cannot be applied: asking for a new copy", index, e);
      markUnsynced();
      return ReplicateResponse.newBuilder().setNeedFill(true).build();
    }
    return ReplicateResponse.getDefaultInstance();
  }

  private synchronized void markUnsynced() {
    log.info(
        "backup of shard {}: cannot apply a record (another initialisation or copy): waiting for a"
            + " new copy",
        index);
    setSynced(false);
  }

  /** Guarded by this: whether this backup holds every update, told to the lifecycle. */
  private void setSynced(boolean value) {
    if (!closed()) {
      moveTo(phase.withSynced(value));
      lifecycle.backupSynced(index, value);
    }
  }

  /**
   * Installs a copy of the primary's shard (a checkpoint file's bytes) as this shard's content.
   *
   * @param file the copy, or null when the primary's shard is not initialised
   */
  void install(long callEpoch, long callLease, long generation, Path file, int crc)
      throws IOException, InterruptedException {
    synchronized (this) {
      checkEpoch(callEpoch, callLease);
      while (work != BackupWork.IDLE) {
        clock.timedWait(this, Long.MAX_VALUE);
      }
      checkEpoch(callEpoch, callLease);
      if (generation < installed) {
        // A copy that was late (its sender gave up on it and sent a newer one, installed now):
        // installing it would take the shard back.
        log.info(
            "backup of shard {}: copy {} came after copy {}: discarded",
            index,
            generation,
            installed);
        return;
      }
      // Records wait from now on: none is applied while the shard's content is replaced.
      workOn(BackupWork.INSTALLING);
    }
    long start = System.nanoTime();
    boolean replaced = false;
    try {
      if (file == null) {
        shard.reset();
      } else {
        CheckpointStore.Restorer restorer = CheckpointService.restorer(shard);
        try {
          restorer.install(CheckpointStore.read(file.toString(), crc, restorer));
        } catch (IOException | RuntimeException e) {
          restorer.discard();
          throw e;
        }
      }
      replaced = true;
    } finally {
      synchronized (this) {
        workOn(BackupWork.IDLE);
        // in the same step as the end of the install: a record of an older copy that was waiting
        // must see the new copy installed, never the old one over the new content
        if (replaced && epoch == callEpoch && !closed()) {
          installed = generation;
          appliedSequence = 0;
          setSynced(true);
        } else if (replaced) {
          setSynced(false);
        }
        notifyAll();
      }
    }
    synchronized (this) {
      checkEpoch(callEpoch, callLease);
    }
    log.info(
        "backup of shard {}: installed copy {} of primary epoch {} (step {}) in {} ms",
        index,
        generation,
        callEpoch,
        shard.step(),
        (System.nanoTime() - start) / 1_000_000);
  }

  @Override
  public void close() {
    synchronized (this) {
      moveTo(BackupPhase.CLOSED);
      notifyAll();
    }
    for (AutoCloseable w : new AutoCloseable[] {watch, syncWatch}) {
      if (w != null) {
        try {
          w.close();
        } catch (Exception e) {
          log.debug("closing a watch of the backup failed: {}", e.toString());
        }
      }
    }
  }
}
