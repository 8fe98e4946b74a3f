package dev.paramserver.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An operator's forced takeover of a replicated shard whose primary ended while etcd recorded its
 * backup out of sync ({@code psctl force-takeover}): by default such a shard waits for its old
 * primary to restart with its log; forced, the backup takes it over with what it holds, and the
 * pushes the old primary answered without it are lost. The force is written into the shard's
 * in-sync record (so the backup sees it) and under {@code audit/force-takeover/<index>/<ms>} (who,
 * when, what may be lost), in one transaction that also checks no primary holds the shard.
 */
public final class ForcedTakeover {
  private ForcedTakeover() {}

  /**
   * What a forced takeover of a shard would do, read from etcd.
   *
   * @param index the shard
   * @param backup the address of the backup that would take over, empty when none is registered
   *     (then the next pserver to register claims the shard from its checkpoint)
   * @param record the shard's in-sync record, empty when none
   * @param syncModRevision the record's modification revision (0: none)
   */
  public record Plan(
      int index, String backup, Optional<ShardSyncRecord> record, long syncModRevision) {

    /** Who would serve the shard, in words. */
    private String taker() {
      return backup.isEmpty()
          ? "a pserver registering (no backup is registered), from the shard's last checkpoint,"
          : "the backup at " + backup;
    }

    /** What may be lost, in words, for the operator. */
    public String risk() {
      if (record.isEmpty()) {
        return "shard "
            + index
            + " has no in-sync record (no primary of this version served it): "
            + taker()
            + " takes it over by itself; forcing changes nothing";
      }
      ShardSyncRecord r = record.get();
      if (r.clean()) {
        return "shard "
            + index
            + ": its primary (epoch "
            + r.epoch()
            + ") stopped cleanly, its last checkpoint holds everything: "
            + taker()
            + " takes it over by itself; forcing loses nothing";
      }
      if (r.inSync()) {
        return "shard "
            + index
            + ": etcd records backup "
            + r.backup()
            + " in sync with the primary of epoch "
            + r.epoch()
            + "; "
            + taker()
            + (r.backup().equals(backup)
                ? " should take over by itself (forcing it loses nothing etcd knows of)"
                : " is another one: the pushes that primary acknowledged since "
                    + Instant.ofEpochMilli(r.changedAtMs())
                    + " may be lost");
      }
      return "shard "
          + index
          + ": etcd records no backup in sync with the primary of epoch "
          + r.epoch()
          + " since "
          + Instant.ofEpochMilli(r.changedAtMs())
          + ". Forcing "
          + taker()
          + " to take over LOSES every push that primary acknowledged without its backup since"
          + " then (counted by its paramserver_pserver_replication_unreplicated_total). Restarting"
          + " that primary with its disk instead loses nothing: the shard waits for its log.";
    }
  }

  /**
   * Reads what a forced takeover of shard {@code index} would do.
   *
   * @throws IllegalStateException naming the problem when there is nothing to force: a primary
   *     holds the shard
   */
  public static Plan plan(KeyValueStore kv, JobKeys keys, int index) {
    Optional<KeyValueStore.KeyValue> primary = kv.get(keys.ps(index));
    if (primary.isPresent()) {
      throw new IllegalStateException(
          "shard "
              + index
              + " has a primary ("
              + primary.get().valueAsString()
              + "): there is nothing to take over");
    }
    Optional<KeyValueStore.KeyValue> backup = kv.get(keys.psBackup(index));
    Optional<KeyValueStore.KeyValue> sync = kv.get(keys.psSync(index));
    return new Plan(
        index,
        backup.map(KeyValueStore.KeyValue::valueAsString).orElse(""),
        sync.map(k -> ShardSyncRecord.decode(k.value())),
        sync.map(KeyValueStore.KeyValue::modRevision).orElse(0L));
  }

  /**
   * Forces the takeover {@code plan} describes, recording {@code who} forced it and when.
   *
   * @return the audit key written
   * @throws IllegalStateException when etcd changed since the plan was read (a primary claimed the
   *     shard, or the record moved on): nothing is written; read the plan again
   */
  public static String force(KeyValueStore kv, JobKeys keys, Plan plan, String who, long nowMs) {
    ShardSyncRecord base = plan.record().orElse(ShardSyncRecord.outOfSync(0, nowMs));
    ShardSyncRecord forced = base.forced(who, nowMs);
    String audit = keys.prefix() + "audit/force-takeover/" + plan.index() + "/" + nowMs;
    String entry =
        "forced_by="
            + who
            + "\nforced_at_ms="
            + nowMs
            + "\nbackup="
            + plan.backup()
            + "\nprimary_epoch="
            + base.epoch()
            + "\nrisk="
            + plan.risk()
            + "\n";
    boolean written =
        kv.commitIfRevisions(
            Map.of(keys.ps(plan.index()), 0L, keys.psSync(plan.index()), plan.syncModRevision()),
            Map.of(
                keys.psSync(plan.index()),
                forced.encode(),
                audit,
                entry.getBytes(StandardCharsets.UTF_8)),
            List.of());
    if (!written) {
      throw new IllegalStateException(
          "shard "
              + plan.index()
              + " changed in etcd meanwhile (a primary claimed it, or its record moved on):"
              + " nothing forced; look again");
    }
    return audit;
  }
}
