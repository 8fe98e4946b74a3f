package dev.paramserver.pserver.replication;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.ChannelFactory;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;

/**
 * Replication of shards ({@code paramserver.pserver.replicas = 2}; see {@code replication.proto}):
 * this pserver's part, primary or backup of one shard. The registration decides the part; a backup
 * whose primary's registration ends takes the shard over (see {@link Takeover}). Every change of
 * role is a move asked of the {@link ShardLifecycle}.
 *
 * <p>The monitor of this object guards only which replicator or backup is current; no etcd call
 * that waits long and no disk write runs under it, so shutdown ({@link #close}) never waits behind
 * a takeover.
 */
@Component
public final class Replication implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Replication.class);

  private final Coordinator coordinator;
  private final ParameterShard shard;
  private final ShardLifecycle lifecycle;
  private final PserverProperties properties;
  private final ObjectProvider<ShardPersistence> persistence;
  private final ChannelFactory channels;
  private final AtomicLong unreplicated = new AtomicLong();
  private final AtomicLong takeovers = new AtomicLong();
  private final AtomicLong takeoversRefused = new AtomicLong();
  private final ReplicationClock clock;
  private final ExecutorService worker;
  private final ShardClaims claims;
  // Written under this (read without it on the replication calls' path).
  private volatile PrimaryReplicator primary;
  private volatile BackupReplica backup;
  private boolean closed;
  private volatile long lastTakeoverMs = -1;
  private volatile Runnable onRoleLost = () -> {};
  // Why this pserver's log failed (a write or an fsync), or null: it serves no shard any more.
  private volatile String storageFailure;

  @Autowired
  public Replication(
      Coordinator coordinator,
      ParameterShard shard,
      ShardLifecycle lifecycle,
      PserverProperties properties,
      ObjectProvider<ShardPersistence> persistence,
      ChannelFactory channels,
      MeterRegistry registry) {
    this(
        coordinator,
        shard,
        lifecycle,
        properties,
        persistence,
        channels,
        registry,
        ReplicationClock.SYSTEM);
  }

  /**
   * As the service wires it, on {@code clock}'s time, waits and threads (a deterministic simulation
   * gives its own; see {@link ReplicationClock}).
   */
  public Replication(
      Coordinator coordinator,
      ParameterShard shard,
      ShardLifecycle lifecycle,
      PserverProperties properties,
      ObjectProvider<ShardPersistence> persistence,
      ChannelFactory channels,
      MeterRegistry registry,
      ReplicationClock clock) {
    this.clock = clock;
    this.worker = clock.singleThread("pserver-replication");
    this.channels = channels;
    this.coordinator = coordinator;
    this.shard = shard;
    this.lifecycle = lifecycle;
    this.properties = properties;
    this.persistence = persistence;
    this.claims = new ShardClaims(coordinator, persistence, () -> storageFailure);
    FunctionCounter.builder(
            "paramserver.pserver.replication.unreplicated", unreplicated, AtomicLong::get)
        .description(
            "Pushes a primary answered without its backup's acknowledgement (backup gone or late)")
        .register(registry);
    FunctionCounter.builder("paramserver.pserver.replication.takeovers", takeovers, AtomicLong::get)
        .description("Shards this pserver took over as a backup whose primary ended")
        .register(registry);
    FunctionCounter.builder(
            "paramserver.pserver.replication.takeovers.refused", takeoversRefused, AtomicLong::get)
        .description(
            "Takeovers this backup did not make because etcd did not record it in sync with the"
                + " primary that ended (the shard waits for that primary's log)")
        .register(registry);
    Gauge.builder(
            "paramserver.pserver.replication.backup.synced", this, r -> r.backupSynced() ? 1 : 0)
        .description("1 when this primary's backup holds every acknowledged update")
        .register(registry);
  }

  /** The time, waits and threads of this replication. */
  ReplicationClock clock() {
    return clock;
  }

  /** True with {@code replicas = 2}. */
  public boolean enabled() {
    return properties.replicas() > 1;
  }

  /** True when this pserver is a primary whose backup holds every acknowledged update. */
  public boolean backupSynced() {
    PrimaryReplicator p = primary;
    return p != null && p.backupSynced();
  }

  /**
   * True when this pserver serves shard {@code index} (alone or as its primary) or takes it over.
   */
  boolean serves(int index) {
    ShardRole role = lifecycle.role();
    return (role.serves() && lifecycle.index() == index)
        || (role == ShardRole.TAKING_OVER && lifecycle.backupOf() == index);
  }

  /** The backup role, or null when this pserver is not a backup. */
  BackupReplica backup() {
    return backup;
  }

  /** Milliseconds the last takeover took from the primary's key vanishing to serving, or -1. */
  public long lastTakeoverMs() {
    return lastTakeoverMs;
  }

  /**
   * Sets what runs (on the replication thread) when this pserver's role ended without a new one: a
   * backup reported another primary, or a takeover failed and gave the index back. The registration
   * registers again.
   */
  public void onRoleLost(Runnable handler) {
    this.onRoleLost = handler;
  }

  /**
   * This pserver now serves shard {@code index} (its state is loaded) under {@code lease}: send
   * every update to the shard's backup from now on.
   *
   * @throws ServiceException NOT_PRIMARY when {@code ps/<index>} is not held under {@code lease}
   */
  public void becomePrimary(int index, Lease lease) {
    closeRoles();
    KeyValueStore kv = coordinator.kv();
    String key = coordinator.keys().ps(index);
    KeyValueStore.KeyValue mine =
        kv.get(key)
            .filter(k -> k.leaseId() == lease.id())
            .orElseThrow(
                () ->
                    new ServiceException(
                        ErrorReason.NOT_PRIMARY, key + " is not held under this pserver's lease"));
    // Before it serves: etcd records this epoch with no backup in sync, so that a backup of an
    // earlier epoch's record cannot take over on its word, and this pserver's log is the one the
    // shard waits for if it ends (a restart finds its epoch there).
    InSyncRecorder inSync =
        new InSyncRecorder(
            kv, key, coordinator.keys().psSync(index), mine.createRevision(), index, clock);
    inSync.start();
    ShardPersistence persisted = persistence.getIfAvailable();
    if (persisted != null) {
      persisted.logEpoch(index, mine.createRevision());
      persisted.onStorageFailure(this::storageFailed);
    }
    PrimaryReplicator p =
        new PrimaryReplicator(
            shard,
            channels,
            index,
            mine.createRevision(),
            properties.replicationTimeout(),
            new OwnershipCheck(
                kv, key, mine.createRevision(), lease, properties.replicationTimeout(), clock),
            inSync,
            scratch(),
            this::deposed,
            unreplicated,
            clock);
    synchronized (this) {
      if (closed) {
        p.close();
        throw new ServiceException(ErrorReason.SHUTTING_DOWN, "replication is closed");
      }
      primary = p;
    }
    // Attached before it starts following the backup: a copy cut from now on misses no record.
    lifecycle.servePrimary(p);
    try {
      p.start(kv, coordinator.keys().psBackup(index));
    } catch (RuntimeException e) {
      stop();
      throw e;
    }
    log.info("pserver {} is the primary of its shard (epoch {})", index, mine.createRevision());
  }

  /**
   * This pserver's log failed (a write or an fsync, see {@code WriteAheadLog}): nothing more is
   * acknowledged (the log refuses every write from now on), and a primary gives its shard up
   * through the lifecycle (DEPOSED: the registration revokes its lease, so its backup, in sync,
   * takes over); it claims no shard as a primary again until restarted. Does not block (runs on the
   * failing thread).
   */
  void storageFailed(String why) {
    storageFailure = why;
    String message = "this pserver's write-ahead log failed (" + why + "): it gives its shard up";
    try {
      worker.execute(() -> deposed(message));
    } catch (RejectedExecutionException e) {
      log.debug("replication is closed: {}", message);
    }
  }

  private void deposed(String why) {
    if (lifecycle.deposed(why)) {
      roleLost();
    }
  }

  /** Where this pserver may register among the shards, and when it must wait. */
  public ShardClaims claims() {
    return claims;
  }

  /**
   * This pserver is now the backup of shard {@code index}: it holds its calls, drops its state and
   * waits for the primary's copy. When the primary's registration ends it claims {@code ps/<index>}
   * with {@code address} under {@code lease} and calls {@code promoted}.
   */
  public void becomeBackup(int index, String address, Lease lease, IntConsumer promoted) {
    stop();
    lifecycle.backup(index);
    ShardPersistence p = persistence.getIfAvailable();
    if (p != null) {
      try {
        p.discardLog(index);
      } catch (RuntimeException e) {
        log.warn("setting the old log of shard {} aside failed: {}", index, e.toString());
      }
    }
    Takeover takeover =
        new Takeover(coordinator, lifecycle, persistence, this, address, lease, promoted, shard);
    BackupReplica b =
        new BackupReplica(
            shard,
            lifecycle,
            index,
            coordinator.kv(),
            coordinator.keys().ps(index),
            coordinator.keys().psSync(index),
            lease.id(),
            properties.replicationTimeout(),
            gone -> {
              try {
                worker.execute(() -> takeover.run(gone));
              } catch (RejectedExecutionException e) {
                log.debug("replication is closed: no takeover of shard {}", index);
              }
            },
            clock);
    synchronized (this) {
      if (closed) {
        return;
      }
      backup = b;
    }
    b.start();
    log.info("pserver is the backup of shard {}", index);
  }

  /** A takeover claimed the index: {@code b} is no longer the current backup. */
  synchronized boolean retire(BackupReplica b) {
    if (backup != b) {
      return false;
    }
    backup = null;
    return true;
  }

  /** True while {@code b} is the current backup and replication is open. */
  synchronized boolean current(BackupReplica b) {
    return backup == b && !closed;
  }

  void takeoverRefused() {
    takeoversRefused.incrementAndGet();
  }

  void tookOver(long startNanos) {
    takeovers.incrementAndGet();
    lastTakeoverMs = (System.nanoTime() - startNanos) / 1_000_000;
  }

  /** Tells the registration (on the replication thread) that the role ended without a new one. */
  void roleLost() {
    try {
      worker.execute(onRoleLost);
    } catch (RejectedExecutionException e) {
      log.debug("replication is closed: the registration is not asked to register again");
    }
  }

  /** Where a copy for the backup is staged: the log's directory, else the checkpoints'. */
  Path scratch() {
    PserverProperties.Wal w = properties.wal();
    return w.dir() != null ? w.dir() : properties.localCheckpointDir();
  }

  /** Closes the current replicator or backup (no role move). */
  private void closeRoles() {
    PrimaryReplicator p;
    BackupReplica b;
    synchronized (this) {
      p = primary;
      b = backup;
      primary = null;
      backup = null;
    }
    if (p != null) {
      p.close();
    }
    if (b != null) {
      b.close();
    }
  }

  /** Ends this pserver's replication role (re-registration, lease lost, shutdown). */
  public void stop() {
    closeRoles();
    lifecycle.replicationStopped();
  }

  /**
   * Shutdown (after the final checkpoint): a primary whose checkpoint holds every update it applied
   * (or that holds none: not initialised) records a clean stop in etcd, so that the shard need not
   * wait for its log.
   */
  @Override
  public void close() {
    PrimaryReplicator p;
    synchronized (this) {
      closed = true;
      p = primary;
    }
    if (p != null) {
      var status = lifecycle.status();
      if (!status.getInitialised() || status.getCheckpointStep() == status.getStep()) {
        p.recordCleanStop();
      }
    }
    stop();
    worker.shutdownNow();
  }
}
