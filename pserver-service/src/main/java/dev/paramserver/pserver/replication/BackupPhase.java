package dev.paramserver.pserver.replication;

import java.util.EnumSet;
import java.util.Set;

/**
 * Where a {@link BackupReplica} stands with the primary it follows: the one holder of whether this
 * backup holds every update that primary acknowledged (the lifecycle is told each change, for the
 * role it publishes), and whether a takeover is in progress (a new registration under {@code
 * ps/<index>}, this backup's own claim, then leaves what it holds alone).
 *
 * <pre>
 * FILLING ◀──copy installed / record not applicable, new primary──▶ SYNCED
 *    │ primary gone                                                    │ primary gone
 *    ▼                                                                 ▼
 * TAKING_OVER_FILLING ◀──────────── copy installed / record ───▶ TAKING_OVER_SYNCED
 *    (claim lost: back to FILLING or SYNCED)
 * every state ──closed──▶ CLOSED
 * </pre>
 */
enum BackupPhase {
  /** Follows a primary without a complete copy of its updates: records are answered NEED_FILL. */
  FILLING,
  /** Holds every update the primary acknowledged: records are applied in the primary's order. */
  SYNCED,
  /** Filling, and claiming the index of a primary that ended. */
  TAKING_OVER_FILLING,
  /** Synced, and claiming the index of a primary that ended. */
  TAKING_OVER_SYNCED,
  /** The replica ended: calls are refused, nothing changes any more. */
  CLOSED;

  /** Whether a replica in this phase may move to {@code next}. */
  boolean canMoveTo(BackupPhase next) {
    return next(this).contains(next);
  }

  private static Set<BackupPhase> next(BackupPhase p) {
    return switch (p) {
      case FILLING -> EnumSet.of(SYNCED, TAKING_OVER_FILLING, CLOSED);
      case SYNCED -> EnumSet.of(FILLING, TAKING_OVER_SYNCED, CLOSED);
      case TAKING_OVER_FILLING -> EnumSet.of(TAKING_OVER_SYNCED, FILLING, CLOSED);
      case TAKING_OVER_SYNCED -> EnumSet.of(TAKING_OVER_FILLING, SYNCED, CLOSED);
      case CLOSED -> EnumSet.noneOf(BackupPhase.class);
    };
  }

  /** Holds every update of the primary (closed: no). */
  boolean synced() {
    return this == SYNCED || this == TAKING_OVER_SYNCED;
  }

  boolean takingOver() {
    return this == TAKING_OVER_FILLING || this == TAKING_OVER_SYNCED;
  }

  /** The same phase with {@code value} for synced (CLOSED stays CLOSED). */
  BackupPhase withSynced(boolean value) {
    return switch (this) {
      case FILLING, SYNCED -> value ? SYNCED : FILLING;
      case TAKING_OVER_FILLING, TAKING_OVER_SYNCED ->
          value ? TAKING_OVER_SYNCED : TAKING_OVER_FILLING;
      case CLOSED -> CLOSED;
    };
  }

  /** The same phase with a takeover in progress or not (CLOSED stays CLOSED). */
  BackupPhase withTakeover(boolean value) {
    return switch (this) {
      case FILLING, TAKING_OVER_FILLING -> value ? TAKING_OVER_FILLING : FILLING;
      case SYNCED, TAKING_OVER_SYNCED -> value ? TAKING_OVER_SYNCED : SYNCED;
      case CLOSED -> CLOSED;
    };
  }
}
