package dev.paramserver.pserver.replication;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.replication.RegisteredBackup.Phase;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.Replica;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The primary's side of a shard's replication: follows the shard's backup registration ({@code
 * ps_backup/<index>}), sends a new backup a copy of the shard cut under the shard's write lock, and
 * then every record the shard logs, before the push it carries is applied and answered.
 *
 * <p>States of the backup: none registered (pushes are answered on the primary's log alone); it
 * needs a copy (records are not sent: the copy, cut after them, will hold them); a copy is being
 * sent (records are sent with the copy's generation, the backup applies them after the copy); in
 * sync. A failed send drops the backup back to "needs a copy". A backup that answers neither within
 * the replication timeout is given up on for that push: it is answered anyway (and counted), but
 * only once etcd confirmed that this pserver still owns the shard ({@link OwnershipCheck}) and
 * recorded the backup out of sync ({@link InSyncRecorder}), so that the backup does not take the
 * shard over without this primary's log. A copy installed is recorded in sync before the pushes
 * that wait for it are answered.
 */
final class PrimaryReplicator
    implements Replica, AutoCloseable, SettleWaiters.Replicator<RegisteredBackup> {
  private static final Logger log = LoggerFactory.getLogger(PrimaryReplicator.class);

  final ParameterShard shard;
  private final ChannelFactory channels;
  final int index;
  final long epoch;
  final Duration timeout;
  private final OwnershipCheck owner;
  final InSyncRecorder inSync;
  final Path scratch;
  private final Consumer<String> onDeposed;
  private final AtomicLong unreplicated;
  private final ExecutorService copier;
  final ReplicationClock clock;
  private final BackupCopies copies = new BackupCopies(this);
  volatile RegisteredBackup backup;
  volatile boolean closed;
  // Guarded by this: a watch event was applied, so start()'s first read (maybe older) is dropped
  private boolean watched;
  // Guarded by this: the records sent and not answered yet, the pushes settling without a thread,
  // the last sequence number given, and why this pserver was deposed (null: it is the primary).
  private final TreeSet<Long> outstanding = new TreeSet<>();
  private final SettleWaiters<RegisteredBackup> waiters;
  private long issued;
  String deposedWhy;
  private AutoCloseable watch;

  /**
   * @param channels makes the channel to the backup (the service's TLS and interceptors)
   * @param epoch the create revision of this primary's {@code ps/<index>} key
   * @param owner confirms this primary's ownership before a push is answered without the backup
   * @param inSync writes the shard's in-sync record in etcd
   * @param scratch directory for the copy being sent
   * @param onDeposed called (once, with why) when a backup reports that this pserver is no longer
   *     primary
   * @param unreplicated counts pushes answered without the backup's acknowledgement
   * @param clock the time, waits and copier thread of this replication
   */
  PrimaryReplicator(
      ParameterShard shard,
      ChannelFactory channels,
      int index,
      long epoch,
      Duration timeout,
      OwnershipCheck owner,
      InSyncRecorder inSync,
      Path scratch,
      Consumer<String> onDeposed,
      AtomicLong unreplicated,
      ReplicationClock clock) {
    this.clock = clock;
    this.shard = shard;
    this.channels = channels;
    this.index = index;
    this.epoch = epoch;
    this.timeout = timeout;
    this.owner = owner;
    this.inSync = inSync;
    this.scratch = scratch;
    this.onDeposed = onDeposed;
    this.unreplicated = unreplicated;
    this.waiters = new SettleWaiters<>(this, index);
    this.copier = clock.singleThread("pserver-replica-copy-" + index);
  }

  /** Starts following {@code ps_backup/<index>}. */
  void start(KeyValueStore kv, String backupKey) {
    watch =
        kv.watchPrefix(
            backupKey,
            e -> {
              if (e.keyValue().key().equals(backupKey)) {
                boolean put = e.type() == KeyValueStore.WatchEvent.Type.PUT;
                backupAt(put ? e.keyValue() : null, true);
              }
            });
    backupAt(kv.get(backupKey).orElse(null), false);
  }

  /**
   * The backup now registered ({@code registration}: its {@code ps_backup/<index>} key, null:
   * none); the first read loses to events. A new lease is a new registration, even at the same
   * address: the backup dropped what it held, and refuses the calls of the earlier one.
   */
  private void backupAt(KeyValueStore.KeyValue registration, boolean fromWatch) {
    String address = registration == null ? null : registration.valueAsString();
    long lease = registration == null ? 0 : registration.leaseId();
    RegisteredBackup old;
    synchronized (this) {
      old = backup;
      watched |= fromWatch;
      if (closed
          || (!fromWatch && watched)
          || (old != null && old.address.equals(address) && old.lease == lease)) {
        return;
      }
      backup = address == null ? null : new RegisteredBackup(address, lease, channels);
      notifyAll();
    }
    releaseWaiters();
    if (old != null) {
      Channels.close(old.channel);
    }
    if (address != null) {
      log.info(
          "pserver {}: backup registered at {}: sending it a copy of the shard", index, address);
      onCopier(copies::loop, "a copy to the new backup");
    } else if (old != null) {
      log.warn(
          "pserver {}: backup {} is gone: pushes are answered on this log alone",
          index,
          old.address);
    }
  }

  /**
   * Sends the record to the backup without waiting (the caller holds the shard's read lock and its
   * order lock, so records come in the log's order): {@link #settle} waits for the answer.
   */
  @Override
  public void append(WalRecord record) {
    RegisteredBackup b = backup;
    if (b == null) {
      return;
    }
    long generation;
    long sequence;
    long seq;
    synchronized (this) {
      if (b.phase == Phase.NEEDS_COPY) {
        return; // the copy, cut after this push, holds it
      }
      generation = b.generation;
      // the shard calls this in its log's order (under its order lock): the backup applies the
      // records in the order of these numbers
      sequence = ++b.sequence;
      seq = ++issued;
      outstanding.add(seq);
    }
    ListenableFuture<ReplicateResponse> sent =
        b.future
            .withDeadline(clock.deadlineAfter(timeout.toNanos()))
            .replicate(
                ReplicateRequest.newBuilder()
                    .setIndex(index)
                    .setEpoch(epoch)
                    .setGeneration(generation)
                    .setSequence(sequence)
                    .setBackupLease(b.lease)
                    .setRecord(record)
                    .build());
    Futures.addCallback(
        sent,
        new FutureCallback<>() {
          @Override
          public void onSuccess(ReplicateResponse r) {
            if (r.getNeedFill()) {
              needsCopy(b, generation, "it asked for one");
            }
            answered(seq);
          }

          @Override
          public void onFailure(Throwable t) {
            // the record is not held either way; etcd, not the backup, says if this is deposed
            needsCopy(b, generation, t.toString());
            if (RpcErrors.reasonOf(t) == ErrorReason.NOT_PRIMARY) {
              onCopier(() -> refusedByBackup(t.getMessage()), "the backup's refusal");
            }
            answered(seq);
          }
        },
        MoreExecutors.directExecutor());
  }

  private void answered(long seq) {
    synchronized (this) {
      outstanding.remove(seq);
      notifyAll();
    }
    releaseWaiters();
  }

  /** Releases the waiters a change of state (closed, deposed, a copy due) ended. */
  private void releaseWaiters() {
    List<SettleWaiters.Waiter<RegisteredBackup>> released;
    synchronized (this) {
      released = waiters.releasable();
    }
    released.forEach(SettleWaiters.Waiter::finish);
  }

  @Override
  public boolean inSync(RegisteredBackup b) {
    return !closed && deposedWhy == null && b != null && backup == b && b.phase == Phase.SYNCED;
  }

  @Override
  public boolean answeredThrough(long mine) {
    return outstanding.isEmpty() || outstanding.first() > mine;
  }

  void deposed(String cause) {
    String why =
        "pserver "
            + index
            + " is no longer the primary of its shard ("
            + cause
            + "): find the new primary in etcd";
    synchronized (this) {
      if (deposedWhy != null) {
        return;
      }
      deposedWhy = why;
    }
    releaseWaiters();
    onDeposed.accept(why);
  }

  /** A backup refused this primary: deposed (true) only if etcd agrees; else the copy retries. */
  boolean refusedByBackup(String why) {
    boolean deposed = !owner.ownerDespiteRefusal(why);
    if (deposed) {
      deposed(why);
    }
    return deposed;
  }

  private void needsCopy(RegisteredBackup b, long generation, String why) {
    synchronized (this) {
      if (backup != b || b.generation != generation || b.phase == Phase.NEEDS_COPY) {
        return;
      }
      b.phase = Phase.NEEDS_COPY;
    }
    releaseWaiters();
    log.warn("pserver {}: backup {} needs a new copy of the shard: {}", index, b.address, why);
    onCopier(copies::loop, "a new copy");
  }

  /**
   * Returns once every record sent so far was answered and the backup holds the shard (waiting for
   * a copy in progress). A push the backup does not hold then (none is registered, or it did not
   * answer within the replication timeout: counted) is answered on this primary's log alone, and
   * only after {@link OwnershipCheck#confirm} read from etcd that this pserver still owns the
   * shard; every answer also needs the lease alive by this process's clock.
   *
   * @throws ServiceException SHUTTING_DOWN (UNAVAILABLE) when this pserver is not, or cannot
   *     confirm it is, still the primary (a backup reported another primary, replication stopped,
   *     the lease is lost, etcd shows another owner or does not answer): the push must not be
   *     acknowledged
   */
  @Override
  public void settle() {
    RegisteredBackup b = backup;
    long deadline = clock.nanoTime() + timeout.toNanos();
    long mine;
    synchronized (this) {
      mine = issued;
    }
    settle(b, mine, deadline);
  }

  /**
   * As {@link #settle}, completed on the thread that received the backup's last answer (no thread
   * waits for the backup; see {@link SettleWaiters}).
   */
  @Override
  public CompletableFuture<Void> settleAsync(Executor blocking) {
    RegisteredBackup b = backup;
    long deadline = clock.nanoTime() + timeout.toNanos();
    SettleWaiters.Waiter<RegisteredBackup> w;
    synchronized (this) {
      w = waiters.ask(issued, b, deadline, blocking);
    }
    if (!w.queued()) {
      w.finish();
    }
    return w.done;
  }

  @Override
  public void checkLease() {
    if (!owner.leaseAlive()) {
      deposed("its lease is lost");
      throw new ServiceException(
          ErrorReason.SHUTTING_DOWN,
          "pserver " + index + " lost its lease: the push is not acknowledged; retry");
    }
  }

  /** {@link #settle} for the records up to {@code mine}, backup {@code b}, by {@code deadline}. */
  @Override
  public void settle(RegisteredBackup b, long mine, long deadline) {
    boolean late = false;
    boolean alone;
    synchronized (this) {
      while (!closed
          && deposedWhy == null
          && ((!outstanding.isEmpty() && outstanding.first() <= mine)
              || (b != null && backup == b && b.phase != Phase.SYNCED))) {
        long left = deadline - clock.nanoTime();
        if (left <= 0) {
          late = true;
          break;
        }
        try {
          clock.timedWait(this, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new ServiceException(
              ErrorReason.SHUTTING_DOWN,
              "pserver " + index + " was interrupted replicating the push: retry");
        }
      }
      if (deposedWhy != null) {
        throw new ServiceException(ErrorReason.SHUTTING_DOWN, deposedWhy);
      }
      if (closed) {
        // replication stopped (lease lost, registering again): what was not answered yet is not
        // known to be on a backup that may take over
        throw new ServiceException(
            ErrorReason.SHUTTING_DOWN,
            "pserver "
                + index
                + " stopped replicating its shard (lease lost or registering again): the push is"
                + " not acknowledged; retry on the primary registered in etcd");
      }
      alone = late || b == null || backup != b || b.phase != Phase.SYNCED;
    }
    checkLease();
    if (alone) {
      try {
        owner.confirm();
        if (late) {
          behind(b);
        }
        if (inSync.recordOutOfSync(
            late ? "it did not hold a push within " + timeout : "no backup holds the push")) {
          // A backup in sync now holds this push: it registered after the push was applied (its
          // copy, cut later, holds it), or behind() above made it need a new copy. No copy is
          // due, so nothing else would record it in sync again: the shard would stay without a
          // backup allowed to take it over, even with pushes flowing.
          onCopier(copies::recordSynced, "recording the backup in sync");
        }
      } catch (OwnershipCheck.OwnershipException e) {
        if (e.verdict() == OwnershipCheck.Verdict.NOT_OWNER) {
          deposed(e.getMessage());
        }
        throw e;
      }
    }
    if (late) {
      unreplicated.incrementAndGet();
      log.warn(
          "pserver {}: backup {} did not hold the push within {}: answered without it (this"
              + " pserver's ownership confirmed in etcd)",
          index,
          b == null ? "(none)" : b.address,
          timeout);
    }
  }

  /**
   * A push is answered without {@code b}, which may lack it (its record late or lost): {@code b}
   * needs a new copy, cut after that push, before it can be recorded in sync again.
   */
  private void behind(RegisteredBackup b) {
    synchronized (this) {
      if (b == null || backup != b || b.phase == Phase.NEEDS_COPY) {
        return;
      }
      b.phase = Phase.NEEDS_COPY;
    }
    releaseWaiters();
    log.warn(
        "pserver {}: backup {} may lack a push answered without it: new copy", index, b.address);
    onCopier(copies::loop, "a new copy");
  }

  /**
   * Runs {@code task} on the copier thread. A change of state that read the replicator open may
   * submit after {@link #close} stopped the copier (a Replicate failing, a watch event, a push
   * settling, all racing the shutdown): the task is moot and dropped at DEBUG. The copier refuses
   * nothing while open; if it does, that is reported at ERROR with the rejection.
   */
  void onCopier(Runnable task, String what) {
    try {
      copier.execute(task);
    } catch (RejectedExecutionException e) {
      if (closed) {
        log.debug("pserver {}: replication closed, {} dropped", index, what);
      } else {
        log.error("pserver {}: the copier refused {} while replication is open", index, what, e);
      }
    }
  }

  /** The primary stops cleanly, its last checkpoint holding every update: etcd records it. */
  void recordCleanStop() {
    inSync.recordCleanStop();
  }

  /** True when a backup is registered and holds every update (for status and tests). */
  boolean backupSynced() {
    RegisteredBackup b = backup;
    return b != null && b.phase == Phase.SYNCED;
  }

  @Override
  public void close() {
    RegisteredBackup b;
    synchronized (this) {
      closed = true;
      b = backup;
      backup = null;
      notifyAll();
    }
    releaseWaiters();
    if (watch != null) {
      try {
        watch.close();
      } catch (Exception e) {
        log.debug("closing the backup watch failed: {}", e.toString());
      }
    }
    copier.shutdownNow();
    if (b != null) {
      Channels.close(b.channel);
    }
  }
}
