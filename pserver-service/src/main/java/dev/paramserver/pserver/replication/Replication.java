package dev.paramserver.pserver.replication;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.coordination.Lease;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.checkpoint.CheckpointService;
import dev.paramserver.pserver.registration.ShardPersistence;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.ServiceException;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Component;

/**
 * Replication of shards ({@code paramserver.pserver.replicas = 2}; see {@code replication.proto}):
 * this pserver's role, primary or backup of one shard. The registration decides the role; a backup
 * whose primary's registration ends takes the shard over here: it claims {@code ps/<index>} under
 * its own lease and, when it holds every acknowledged update, serves the state it holds (the
 * checkpoint written at once is the new base of its log); a backup that was still waiting for its
 * copy loads the shard's checkpoint instead, as a restarted primary would.
 */
@Component
public final class Replication implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Replication.class);

  private final Coordinator coordinator;
  private final ParameterShard shard;
  private final PserverProperties properties;
  private final ObjectProvider<CheckpointService> checkpoints;
  private final ObjectProvider<ShardPersistence> persistence;
  private final ChannelFactory channels;
  private final AtomicLong unreplicated = new AtomicLong();
  private final AtomicLong takeovers = new AtomicLong();
  private final ExecutorService worker =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "pserver-replication");
            t.setDaemon(true);
            return t;
          });
  private volatile PrimaryReplicator primary;
  private volatile BackupReplica backup;
  private volatile long lastTakeoverMs = -1;
  private volatile Runnable onDeposed = () -> {};

  public Replication(
      Coordinator coordinator,
      ParameterShard shard,
      PserverProperties properties,
      ObjectProvider<CheckpointService> checkpoints,
      ObjectProvider<ShardPersistence> persistence,
      ChannelFactory channels,
      MeterRegistry registry) {
    this.channels = channels;
    this.coordinator = coordinator;
    this.shard = shard;
    this.properties = properties;
    this.checkpoints = checkpoints;
    this.persistence = persistence;
    FunctionCounter.builder(
            "paramserver.pserver.replication.unreplicated", unreplicated, AtomicLong::get)
        .description(
            "Pushes a primary answered without its backup's acknowledgement (backup gone or late)")
        .register(registry);
    FunctionCounter.builder("paramserver.pserver.replication.takeovers", takeovers, AtomicLong::get)
        .description("Shards this pserver took over as a backup whose primary ended")
        .register(registry);
    Gauge.builder(
            "paramserver.pserver.replication.backup.synced", this, r -> r.backupSynced() ? 1 : 0)
        .description("1 when this primary's backup holds every acknowledged update")
        .register(registry);
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

  /** The backup role, or null when this pserver is not a backup. */
  BackupReplica backup() {
    return backup;
  }

  /** Milliseconds the last takeover took from the primary's key vanishing to serving, or -1. */
  public long lastTakeoverMs() {
    return lastTakeoverMs;
  }

  /** Sets what runs when a backup reports that another pserver is the primary now. */
  public void onDeposed(Runnable handler) {
    this.onDeposed = handler;
  }

  /**
   * This pserver now serves shard {@code index} (its state is loaded) under {@code lease}: send
   * every update to the shard's backup from now on.
   */
  public synchronized void becomePrimary(int index, Lease lease) {
    stop();
    KeyValueStore kv = coordinator.kv();
    String key = coordinator.keys().ps(index);
    KeyValueStore.KeyValue mine =
        kv.get(key)
            .filter(k -> k.leaseId() == lease.id())
            .orElseThrow(
                () ->
                    new ServiceException(
                        ErrorReason.NOT_PRIMARY, key + " is not held under this pserver's lease"));
    PrimaryReplicator p =
        new PrimaryReplicator(
            shard,
            channels,
            index,
            mine.createRevision(),
            properties.replicationTimeout(),
            scratch(),
            () -> worker.execute(onDeposed),
            unreplicated);
    shard.setBackupOf(-1, null);
    shard.attachReplica(p);
    primary = p;
    p.start(kv, coordinator.keys().psBackup(index));
    log.info("pserver {} is the primary of its shard (epoch {})", index, mine.createRevision());
  }

  /**
   * This pserver is now the backup of shard {@code index}: it holds its calls, drops its state and
   * waits for the primary's copy. When the primary's registration ends it claims {@code ps/<index>}
   * with {@code address} under {@code lease} and calls {@code promoted}.
   */
  public synchronized void becomeBackup(
      int index, String address, Lease lease, IntConsumer promoted) {
    stop();
    shard.holdCalls(
        "this pserver is the backup of shard " + index + ": call the primary (ps/" + index + ")");
    shard.setIndex(-1);
    shard.reset();
    CheckpointService cs = checkpoints.getIfAvailable();
    if (cs != null) {
      cs.discardLog(index);
    }
    BackupReplica b =
        new BackupReplica(
            shard,
            index,
            coordinator.kv(),
            coordinator.keys().ps(index),
            properties.replicationTimeout(),
            gone -> worker.execute(() -> takeover(gone, address, lease, promoted)));
    backup = b;
    shard.setBackupOf(index, b);
    b.start();
    log.info("pserver is the backup of shard {}", index);
  }

  private void takeover(BackupReplica b, String address, Lease lease, IntConsumer promoted) {
    long start = System.nanoTime();
    int index = b.index();
    synchronized (this) {
      if (backup != b || !lease.isAlive()) {
        return;
      }
      KeyValueStore kv = coordinator.kv();
      String key = coordinator.keys().ps(index);
      boolean synced = b.beginTakeover();
      boolean claimed;
      try {
        claimed = kv.putIfAbsent(key, address.getBytes(StandardCharsets.UTF_8), lease);
      } catch (RuntimeException e) {
        log.warn("backup of shard {}: claiming {} failed: {}", index, key, e.toString());
        b.abortTakeover();
        return;
      }
      if (!claimed) {
        log.info("backup of shard {}: another pserver claimed {} first", index, key);
        b.abortTakeover();
        return;
      }
      b.close();
      backup = null;
      try {
        kv.delete(coordinator.keys().psBackup(index));
      } catch (RuntimeException e) {
        log.warn("deleting the backup registration of shard {} failed: {}", index, e.toString());
      }
      CheckpointService cs = checkpoints.getIfAvailable();
      if (synced && cs != null) {
        cs.adopt(index);
      } else if (synced) {
        shard.setIndex(index);
      } else {
        log.warn(
            "backup of shard {} took over before it held a copy: loading the shard's checkpoint",
            index);
        ShardPersistence p = persistence.getIfAvailable();
        if (p != null) {
          p.load(index);
        }
        shard.setIndex(index);
      }
      promoted.accept(index);
      try {
        becomePrimary(index, lease);
      } catch (RuntimeException e) {
        log.error("backup of shard {} claimed it but cannot serve as its primary", index, e);
        return;
      }
      shard.releaseCalls();
      takeovers.incrementAndGet();
      lastTakeoverMs = (System.nanoTime() - start) / 1_000_000;
      log.info(
          "took over shard {} as its primary at step {} ({} state, {} ms)",
          index,
          shard.step(),
          synced ? "replicated" : "checkpointed",
          lastTakeoverMs);
    }
  }

  /** Where a copy for the backup is staged: the log's directory, else the checkpoints'. */
  Path scratch() {
    PserverProperties.Wal w = properties.wal();
    return w.dir() != null ? w.dir() : properties.localCheckpointDir();
  }

  /** Ends this pserver's role (re-registration, shutdown). */
  public synchronized void stop() {
    PrimaryReplicator p = primary;
    primary = null;
    if (p != null) {
      shard.attachReplica(null);
      p.close();
    }
    BackupReplica b = backup;
    backup = null;
    if (b != null) {
      b.close();
    }
    shard.setBackupOf(-1, null);
  }

  @Override
  public void close() {
    stop();
    worker.shutdownNow();
  }
}
