package dev.paramserver.pserver.replication;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;

/**
 * A backup taking over its shard when the primary's registration ended: claims {@code ps/<index>}
 * under its own lease and, when it holds every acknowledged update, serves the state it holds (the
 * checkpoint written at once is the new base of its log); a backup that was still waiting for its
 * copy loads the shard's checkpoint instead, as a restarted primary would.
 *
 * <p>It takes over only when etcd's in-sync record ({@link ShardSyncRecord}) names it in sync with
 * the primary that ended (and it still holds every record of it), or when an operator forced the
 * takeover ({@code psctl force-takeover}). Otherwise the primary answered pushes without it: the
 * shard waits for that primary to restart with its log (it claims the shard back, see {@link
 * ShardClaims#holdsLatestLog}), as Kafka never elects a replica outside the in-sync set unless told
 * to.
 *
 * <p>After the claim, installing the state and becoming primary are retried ({@link #ATTEMPTS}
 * times); if they still fail, or the pserver shuts down meanwhile, the claim is released (the key
 * deleted, the lifecycle UNCLAIMED and the registration asked to register again), so the index goes
 * back to the pool instead of staying claimed by a pserver that refuses every call. Runs on the
 * replication thread, under no lock that shutdown takes.
 */
final class Takeover {
  private static final Logger log = LoggerFactory.getLogger(Takeover.class);

  /** Attempts at installing the state and becoming primary after the claim. */
  static final int ATTEMPTS = 3;

  private final Coordinator coordinator;
  private final ShardLifecycle lifecycle;
  private final ObjectProvider<ShardPersistence> persistence;
  private final Replication replication;
  private final String address;
  private final Lease lease;
  private final IntConsumer promoted;
  private final ParameterShard shard;

  Takeover(
      Coordinator coordinator,
      ShardLifecycle lifecycle,
      ObjectProvider<ShardPersistence> persistence,
      Replication replication,
      String address,
      Lease lease,
      IntConsumer promoted,
      ParameterShard shard) {
    this.coordinator = coordinator;
    this.lifecycle = lifecycle;
    this.persistence = persistence;
    this.replication = replication;
    this.address = address;
    this.lease = lease;
    this.promoted = promoted;
    this.shard = shard;
  }

  /** Takes over the shard {@code b} is the backup of (its primary ended). */
  void run(BackupReplica b) {
    long start = System.nanoTime();
    int index = b.index();
    if (!replication.current(b) || !lease.isAlive()) {
      return;
    }
    Optional<ShardSyncRecord> record;
    try {
      record = ShardSyncRecord.read(coordinator.kv(), coordinator.keys(), index);
    } catch (RuntimeException e) {
      log.warn(
          "backup of shard {}: reading its in-sync record failed, no takeover: {}",
          index,
          e.toString());
      return;
    }
    boolean forced = record.map(ShardSyncRecord::isForced).orElse(false);
    if (!admitted(b, record)) {
      return;
    }
    // the copy this backup holds is served only if etcd does not know of a push it lacks
    boolean ownCopy = record.isEmpty() || forced || record.get().namesInSync(b.epoch(), address);
    if (!lifecycle.beginTakeover(index)) {
      return;
    }
    boolean synced = b.beginTakeover() && ownCopy;
    if (!synced && !record.map(ShardSyncRecord::admitsCheckpoint).orElse(true)) {
      log.warn(
          "backup of shard {}: etcd records it in sync but it lost a record since: the shard waits"
              + " for its primary's log",
          index);
      replication.takeoverRefused();
      lifecycle.takeoverAborted(false);
      b.abortTakeover();
      return;
    }
    if (forced) {
      ShardSyncRecord r = record.get();
      log.warn(
          "backup of shard {}: takeover FORCED by {} at {} ms (primary epoch {}, {}): pushes the"
              + " ended primary answered without this backup are lost",
          index,
          r.forcedBy(),
          r.forcedAtMs(),
          r.epoch(),
          r.inSync() ? "backup recorded in sync" : "backup recorded out of sync");
    }
    KeyValueStore kv = coordinator.kv();
    String key = coordinator.keys().ps(index);
    boolean claimed;
    try {
      claimed = kv.putIfAbsent(key, address.getBytes(StandardCharsets.UTF_8), lease);
    } catch (RuntimeException e) {
      log.warn("backup of shard {}: claiming {} failed: {}", index, key, e.toString());
      claimed = false;
    }
    if (!claimed) {
      log.info("backup of shard {}: {} is held by another pserver (or unreachable)", index, key);
      lifecycle.takeoverAborted(b.synced());
      b.abortTakeover();
      return;
    }
    if (replication.retire(b)) {
      b.close();
    }
    try {
      kv.delete(coordinator.keys().psBackup(index));
    } catch (RuntimeException e) {
      log.warn("deleting the backup registration of shard {} failed: {}", index, e.toString());
    }
    if (!serve(index, synced)) {
      release(index, key);
      return;
    }
    replication.tookOver(start);
    log.info(
        "took over shard {} as its primary at step {} ({} state, {} ms)",
        index,
        shard.step(),
        synced ? "replicated" : "checkpointed",
        replication.lastTakeoverMs());
  }

  /**
   * Whether etcd lets {@code b} take the shard over: no record (no primary of this code ever served
   * it), or one naming this backup in sync with the primary {@code b} followed.
   */
  private boolean admitted(BackupReplica b, Optional<ShardSyncRecord> record) {
    if (record.isEmpty() || record.get().admitsTakeover(b.epoch(), address)) {
      return true;
    }
    ShardSyncRecord r = record.get();
    replication.takeoverRefused();
    log.warn(
        "backup of shard {}: etcd does not record it in sync with the primary that ended (primary"
            + " epoch {}, followed {}, {}): the shard waits for that primary to restart with its"
            + " log; 'psctl force-takeover --shard {}' makes this backup take over and loses"
            + " what the primary answered alone",
        b.index(),
        r.epoch(),
        b.epoch(),
        r.inSync()
            ? "in sync: " + r.backup()
            : "out of sync since " + java.time.Instant.ofEpochMilli(r.changedAtMs()),
        b.index());
    return false;
  }

  /** Installs the state and becomes primary, retried; false when it did not succeed. */
  private boolean serve(int index, boolean synced) {
    AtomicInteger tried = new AtomicInteger();
    boolean[] installed = {false};
    Retry retry =
        new Retry(
                Duration.ofMillis(200),
                Duration.ofSeconds(2),
                () ->
                    tried.get() >= ATTEMPTS
                        || !lease.isAlive()
                        || lifecycle.role() != ShardRole.TAKING_OVER)
            .pausing(replication.clock()::sleep);
    try {
      return retry.until(
          "taking over shard " + index,
          attempt -> {
            tried.incrementAndGet();
            try {
              if (!installed[0]) {
                install(index, synced);
                installed[0] = true;
                // the registration prefers this index from now on, even if the claim is released
                promoted.accept(index);
              }
              replication.becomePrimary(index, lease);
              return Optional.of(true);
            } catch (RuntimeException e) {
              log.warn(
                  "backup of shard {} claimed it but cannot serve as its primary yet (attempt {}"
                      + " of {}): {}",
                  index,
                  attempt,
                  ATTEMPTS,
                  e.toString());
              return Optional.empty();
            }
          });
    } catch (StoppedException e) {
      return false;
    }
  }

  /** Makes the shard hold the index's state (the replicated one, else its checkpoint). */
  private void install(int index, boolean synced) {
    ShardPersistence p = persistence.getIfAvailable();
    if (synced) {
      if (p != null) {
        p.startLog(index);
      }
      lifecycle.takeoverInstalled();
      if (p != null) {
        p.checkpoint();
      }
      return;
    }
    log.warn(
        "backup of shard {} took over before it held a copy: loading the shard's checkpoint",
        index);
    if (p != null) {
      p.load(index);
    }
    lifecycle.takeoverInstalled();
  }

  /** Gives the claimed index back: the key goes, the shard holds nothing, registration again. */
  private void release(int index, String key) {
    log.error(
        "backup of shard {} claimed it but could not serve it (failed {} times, or shutting"
            + " down): giving {} back",
        index,
        ATTEMPTS,
        key);
    lifecycle.release("the takeover of shard " + index + " failed");
    // Shutdown may have interrupted this thread: the claim is released all the same, and the
    // interrupt restored afterwards.
    boolean interrupted = Thread.interrupted();
    try {
      coordinator
          .kv()
          .get(key)
          .filter(k -> k.leaseId() == lease.id())
          .ifPresent(k -> coordinator.kv().delete(key));
    } catch (RuntimeException e) {
      log.warn("releasing {} failed (the lease's end releases it): {}", key, e.toString());
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    replication.roleLost();
  }
}
