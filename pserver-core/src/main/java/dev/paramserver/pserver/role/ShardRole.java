package dev.paramserver.pserver.role;

import java.util.EnumSet;
import java.util.Set;

/**
 * This pserver's part in its shard, and the moves allowed from each state. {@link ShardLifecycle}
 * makes the moves; registration, replication and checkpointing ask it for them.
 *
 * <pre>
 * UNCLAIMED ──claim──▶ LOADING ──loaded──▶ SERVING ──backup registers──▶ (stays SERVING)
 *     │                   │  └──replicas=2──▶ PRIMARY ──a newer primary, lease lost──▶ DEPOSED
 *     └──backup──▶ BACKUP_FILLING ◀──▶ BACKUP_SYNCED ──primary gone──▶ TAKING_OVER ──▶ PRIMARY
 *                                                      (claim lost: back to BACKUP_*; failed: UNCLAIMED)
 * SERVING ──lease lost──▶ DEPOSED; DEPOSED ──registers again──▶ LOADING or BACKUP_FILLING
 * every state but STOPPED ──shutdown──▶ DRAINING ──▶ STOPPED
 * </pre>
 */
public enum ShardRole {
  /** No index: starting, or a backup's or a failed takeover's role ended. Calls are held. */
  UNCLAIMED,
  /** An index is claimed and its state (checkpoint and log) is being loaded. Calls are held. */
  LOADING,
  /** Serves its index alone ({@code replicas = 1}). */
  SERVING,
  /** Serves its index and sends every logged record to the shard's backup. */
  PRIMARY,
  /** The backup of a shard, waiting for (or installing) the primary's copy. Calls are held. */
  BACKUP_FILLING,
  /** The backup of a shard holding every update its primary acknowledged. Calls are held. */
  BACKUP_SYNCED,
  /** A backup whose primary ended claims the index and becomes its primary. Calls are held. */
  TAKING_OVER,
  /**
   * No longer the owner of its index (a backup reported another primary, the lease was lost, or
   * etcd showed another owner): refuses calls, registers again.
   */
  DEPOSED,
  /** Shutting down: pushes and pulls refused, the final checkpoint is written. */
  DRAINING,
  STOPPED;

  /** Whether a shard in this state may move to {@code next}. */
  public boolean canMoveTo(ShardRole next) {
    return next(this).contains(next);
  }

  private static Set<ShardRole> next(ShardRole s) {
    return switch (s) {
      case UNCLAIMED -> EnumSet.of(LOADING, BACKUP_FILLING, DRAINING);
      case LOADING -> EnumSet.of(SERVING, PRIMARY, UNCLAIMED, DRAINING);
      case SERVING -> EnumSet.of(LOADING, PRIMARY, BACKUP_FILLING, DEPOSED, DRAINING);
      case PRIMARY -> EnumSet.of(DEPOSED, DRAINING);
      case BACKUP_FILLING -> EnumSet.of(BACKUP_SYNCED, TAKING_OVER, UNCLAIMED, DRAINING);
      case BACKUP_SYNCED -> EnumSet.of(BACKUP_FILLING, TAKING_OVER, UNCLAIMED, DRAINING);
      case TAKING_OVER -> EnumSet.of(PRIMARY, BACKUP_FILLING, BACKUP_SYNCED, UNCLAIMED, DRAINING);
      case DEPOSED -> EnumSet.of(LOADING, BACKUP_FILLING, UNCLAIMED, DRAINING);
      case DRAINING -> EnumSet.of(STOPPED);
      case STOPPED -> EnumSet.noneOf(ShardRole.class);
    };
  }

  /** A backup (filling or synced). */
  public boolean isBackup() {
    return this == BACKUP_FILLING || this == BACKUP_SYNCED;
  }

  /** Pushes and pulls are answered (the shard's own checks aside). */
  public boolean serves() {
    return this == SERVING || this == PRIMARY;
  }
}
