package dev.paramserver.pserver.replication;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.pserver.role.ShardPersistence;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Where a registering pserver goes among the replicated shards ({@code replicas = 2}): the primary
 * of a shard ({@code ps/<i>}), the backup of one ({@code ps_backup/<i>}), or nowhere yet. The
 * rules, in order (docs/explanation/replicas.md, "The in-sync record"):
 *
 * <ol>
 *   <li>A shard whose in-sync record names this pserver's log (the epoch recorded next to it equals
 *       the record's) waits for that log: this pserver claims it back, even with a backup
 *       registered; while the process that wrote the log still holds its {@code ps/<i>} (a restart
 *       within the lease's TTL), it waits and goes nowhere else (see {@link #claim}).
 *   <li>Else the primary of a shard that has neither a primary nor a backup, when nothing can be
 *       lost by serving it from its checkpoint ({@link #mayClaim}).
 *   <li>Else the backup of a shard that has none.
 * </ol>
 */
public final class ShardClaims {
  private static final Logger log = LoggerFactory.getLogger(ShardClaims.class);

  private final Coordinator coordinator;
  private final ObjectProvider<ShardPersistence> persistence;
  private final Supplier<String> storageFailure;

  /**
   * @param storageFailure why this pserver's log failed, or null: a pserver whose log failed claims
   *     no shard as a primary until restarted
   */
  ShardClaims(
      Coordinator coordinator,
      ObjectProvider<ShardPersistence> persistence,
      Supplier<String> storageFailure) {
    this.coordinator = coordinator;
    this.persistence = persistence;
    this.storageFailure = storageFailure;
  }

  /**
   * A place this registration took: {@code ps/<index>} (primary) or {@code ps_backup/<index>}.
   *
   * @param primary whether the key taken is {@code ps/<index>}
   */
  public record Claim(int index, boolean primary) {}

  /**
   * Takes a place under {@code granted} with {@code value} (the pserver's address), trying the
   * shards in {@code order}; empty when none may be taken now (the caller revokes {@code granted}
   * and tries again later).
   *
   * <p>A shard that waits for this pserver's log is claimed back, and while its {@code ps/<i>} is
   * still held by the earlier process that wrote the log (the key's create revision is the log's
   * epoch: killed and restarted within the lease's TTL, or paused), this pserver waits for etcd to
   * end that lease and takes no other place: as the backup of the shard it would set the log aside
   * (a backup's state is its primary's copy) and the shard would wait for a log that no pserver
   * replays. The earlier lease is not revoked, though its holder is most likely dead: nothing
   * proves it is not paused instead, and a paused primary knows its lease lost only by its own
   * clock, once the TTL ran out. Revoked sooner, it could resume within its TTL and acknowledge a
   * push through a backup that still follows its epoch, a push this pserver's replay would lack. A
   * key held under another epoch is a pserver that took the shard over as etcd let it (its backup
   * in sync, a clean stop, an operator's force), holding every acknowledged push or told to do
   * without: the usual rules apply.
   */
  public Optional<Claim> claim(List<Integer> order, byte[] value, Lease granted) {
    KeyValueStore kv = coordinator.kv();
    String failure = storageFailure.get();
    if (failure != null) {
      // Not even a backup's place: a backup's log must record what it is sent, and as the backup
      // of the shard it gave up it would hold the place its backup, in sync and perhaps cut off
      // from etcd for a moment, needs to come back to and take the shard over.
      log.warn(
          "this pserver's log failed ({}): it takes no place, primary or backup, until restarted",
          failure);
      return Optional.empty();
    }
    for (int i : order) {
      if (holdsLatestLog(i)) {
        if (kv.putIfAbsent(coordinator.keys().ps(i), value, granted)) {
          return Optional.of(new Claim(i, true));
        }
        if (heldByThisLogsProcess(i)) {
          return Optional.empty();
        }
        break;
      }
    }
    for (int i : order) {
      if (mayClaim(i, kv.get(coordinator.keys().psBackup(i)).isPresent())
          && kv.putIfAbsent(coordinator.keys().ps(i), value, granted)) {
        return Optional.of(new Claim(i, true));
      }
    }
    for (int i : order) {
      if (kv.putIfAbsent(coordinator.keys().psBackup(i), value, granted)) {
        return Optional.of(new Claim(i, false));
      }
    }
    log.info(
        "every one of the {} shards has a primary and a backup: waiting for a free place",
        order.size());
    return Optional.empty();
  }

  /**
   * Whether {@code ps/<index>} is held by the process that wrote this pserver's log of it (its
   * create revision is the log's epoch), or vanished since the claim was refused: then wait.
   */
  private boolean heldByThisLogsProcess(int index) {
    long logged = loggedEpoch(index);
    String key = coordinator.keys().ps(index);
    Optional<KeyValueStore.KeyValue> holder = coordinator.kv().get(key);
    if (holder.isPresent() && holder.get().createRevision() != logged) {
      return false;
    }
    log.info(
        "shard {} waits for this pserver's log (epoch {}), and {} is {}: waiting for etcd to end"
            + " that lease (within its TTL) rather than registering as a backup, which would set"
            + " the log aside",
        index,
        logged,
        key,
        holder
            .map(
                k ->
                    "still held by the lease of the process that wrote the log ("
                        + Long.toHexString(k.leaseId())
                        + ": this pserver before a restart, or paused)")
            .orElse("free again"));
    return true;
  }

  /**
   * Whether this pserver may claim the vacant {@code ps/<index>} as a primary: it holds the log of
   * the shard's last primary, or no backup is registered and nothing may be lost by serving the
   * shard from its checkpoint (no in-sync record yet, the last primary stopped cleanly, or an
   * operator forced it). A shard whose last primary ended while answering pushes alone waits for
   * that primary's log.
   *
   * @param backupRegistered whether {@code ps_backup/<index>} exists (then the backup takes over)
   */
  public boolean mayClaim(int index, boolean backupRegistered) {
    String failure = storageFailure.get();
    if (failure != null) {
      log.warn("shard {} not claimed: this pserver's log failed ({})", index, failure);
      return false;
    }
    if (holdsLatestLog(index)) {
      return true;
    }
    if (backupRegistered) {
      return false;
    }
    try {
      Optional<ShardSyncRecord> r =
          ShardSyncRecord.read(coordinator.kv(), coordinator.keys(), index);
      if (r.isPresent() && !r.get().admitsCheckpoint()) {
        log.info(
            "shard {} waits for the log of its last primary (epoch {}, {}): not claimed; 'psctl"
                + " force-takeover --shard {}' serves it from its checkpoint",
            index,
            r.get().epoch(),
            r.get().inSync() ? "its backup in sync" : "answering without its backup",
            index);
        return false;
      }
      return true;
    } catch (RuntimeException e) {
      log.warn("reading the in-sync record of shard {} failed: {}", index, e.toString());
      return false;
    }
  }

  /**
   * True when this pserver's log is that of the last primary of shard {@code index} (the epoch it
   * recorded equals the one of the shard's in-sync record): after a crash the shard waits for this
   * log unless its backup was in sync, so this pserver claims the shard back even though a backup
   * is registered (see docs/explanation/replicas.md).
   */
  public boolean holdsLatestLog(int index) {
    long logged = loggedEpoch(index);
    if (logged <= 0) {
      return false;
    }
    try {
      return ShardSyncRecord.read(coordinator.kv(), coordinator.keys(), index)
          .map(r -> r.epoch() == logged)
          .orElse(false);
    } catch (RuntimeException e) {
      log.warn("reading the in-sync record of shard {} failed: {}", index, e.toString());
      return false;
    }
  }

  private long loggedEpoch(int index) {
    ShardPersistence p = persistence.getIfAvailable();
    return p == null ? 0 : p.loggedEpoch(index);
  }
}
