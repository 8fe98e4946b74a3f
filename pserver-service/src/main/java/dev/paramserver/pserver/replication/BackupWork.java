package dev.paramserver.pserver.replication;

/**
 * What a {@link BackupReplica} is doing to the shard's content: at most one copy installed or one
 * record applied at a time, never both (IDLE → INSTALLING → IDLE, IDLE → APPLYING → IDLE).
 */
enum BackupWork {
  IDLE,
  /** A primary's copy replaces the shard's content: records wait. */
  INSTALLING,
  /** One record is being applied: a copy waits. */
  APPLYING;

  /** Whether the replica may go from this to {@code next}. */
  boolean canMoveTo(BackupWork next) {
    return this == IDLE ? next != IDLE : next == IDLE;
  }
}
