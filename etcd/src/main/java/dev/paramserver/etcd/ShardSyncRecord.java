package dev.paramserver.etcd;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What etcd records about a replicated shard's backup ({@code ps_sync/<index>}), as Kafka's
 * controller records a partition's in-sync replicas: the primary's epoch (the create revision of
 * its {@code ps/<index>}), whether its backup holds every update the primary acknowledged, and that
 * backup's address. The primary writes it, fenced on its own {@code ps/<index>}: "in sync" once a
 * copy is installed, "out of sync" before it answers any push without its backup. A backup takes
 * the shard over only if the record names it in sync for the epoch of the primary that ended, or if
 * an operator forced the takeover ({@code psctl force-takeover}: {@code forcedBy}, {@code
 * forcedAtMs}).
 *
 * <p>Stored as {@code key=value} lines, so that it reads well in {@code etcdctl get}.
 *
 * @param epoch the create revision of the primary's {@code ps/<index>}
 * @param inSync whether {@code backup} holds every update the primary acknowledged
 * @param backup the gRPC address of the backup in sync, empty when none
 * @param changedAtMs wall-clock time of the write (milliseconds since the epoch)
 * @param clean the primary stopped cleanly: its last checkpoint holds every update it acknowledged,
 *     so any pserver may serve the shard from it
 * @param forcedBy who forced a takeover of this epoch (empty: none forced)
 * @param forcedAtMs when it was forced (0: not forced)
 */
public record ShardSyncRecord(
    long epoch,
    boolean inSync,
    String backup,
    long changedAtMs,
    boolean clean,
    String forcedBy,
    long forcedAtMs) {

  public ShardSyncRecord {
    backup = backup == null ? "" : backup;
    forcedBy = forcedBy == null ? "" : forcedBy;
  }

  /** The record of a new primary, or one whose backup fell behind: out of sync. */
  public static ShardSyncRecord outOfSync(long epoch, long nowMs) {
    return new ShardSyncRecord(epoch, false, "", nowMs, false, "", 0);
  }

  /** The record of a primary whose backup at {@code backup} holds every acknowledged update. */
  public static ShardSyncRecord inSync(long epoch, String backup, long nowMs) {
    return new ShardSyncRecord(epoch, true, backup, nowMs, false, "", 0);
  }

  /** This record with a takeover forced by {@code who} at {@code nowMs}. */
  public ShardSyncRecord forced(String who, long nowMs) {
    return new ShardSyncRecord(epoch, inSync, backup, changedAtMs, clean, who, nowMs);
  }

  /** This record of a primary that stopped cleanly (its last checkpoint holds everything). */
  public ShardSyncRecord stoppedCleanly(long nowMs) {
    return new ShardSyncRecord(epoch, inSync, backup, nowMs, true, forcedBy, forcedAtMs);
  }

  /**
   * Whether the backup at {@code address}, which followed the primary of {@code primaryEpoch},
   * holds every update that primary acknowledged as far as etcd knows (it may serve its own copy).
   */
  public boolean namesInSync(long primaryEpoch, String address) {
    return epoch == primaryEpoch && inSync && backup.equals(address);
  }

  /**
   * Whether a pserver that does not hold the last primary's log may serve the shard from its
   * checkpoint: the primary stopped cleanly, or an operator forced it.
   */
  public boolean admitsCheckpoint() {
    return clean || isForced();
  }

  /** True when an operator forced a takeover of this epoch. */
  public boolean isForced() {
    return forcedAtMs > 0;
  }

  /**
   * Whether the backup at {@code address}, which followed the primary of {@code primaryEpoch}, may
   * take the shard over: named in sync for that epoch, or a takeover of that epoch forced.
   */
  public boolean admitsTakeover(long primaryEpoch, String address) {
    return admitsCheckpoint() || namesInSync(primaryEpoch, address);
  }

  public byte[] encode() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("epoch", Long.toString(epoch));
    m.put("in_sync", Boolean.toString(inSync));
    m.put("backup", backup);
    m.put("changed_at_ms", Long.toString(changedAtMs));
    if (clean) {
      m.put("clean", "true");
    }
    if (isForced()) {
      m.put("forced_by", forcedBy);
      m.put("forced_at_ms", Long.toString(forcedAtMs));
    }
    StringBuilder b = new StringBuilder();
    m.forEach((k, v) -> b.append(k).append('=').append(v).append('\n'));
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Parses a record written by {@link #encode}.
   *
   * @throws IllegalArgumentException naming the problem when it is not one
   */
  public static ShardSyncRecord decode(byte[] bytes) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      int eq = line.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("shard sync record: '" + line + "' is not key=value");
      }
      m.put(line.substring(0, eq), line.substring(eq + 1));
    }
    try {
      return new ShardSyncRecord(
          Long.parseLong(required(m, "epoch")),
          Boolean.parseBoolean(required(m, "in_sync")),
          m.getOrDefault("backup", ""),
          Long.parseLong(m.getOrDefault("changed_at_ms", "0")),
          Boolean.parseBoolean(m.getOrDefault("clean", "false")),
          m.getOrDefault("forced_by", ""),
          Long.parseLong(m.getOrDefault("forced_at_ms", "0")));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("shard sync record: " + e.getMessage(), e);
    }
  }

  /** The record under {@code ps_sync/<index>}, empty when there is none. */
  public static Optional<ShardSyncRecord> read(KeyValueStore kv, JobKeys keys, int index) {
    return kv.get(keys.psSync(index)).map(k -> decode(k.value()));
  }

  private static String required(Map<String, String> m, String key) {
    String v = m.get(key);
    if (v == null) {
      throw new IllegalArgumentException("shard sync record: '" + key + "' is missing");
    }
    return v;
  }
}
