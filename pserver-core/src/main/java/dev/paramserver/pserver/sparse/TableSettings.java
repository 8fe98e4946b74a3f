package dev.paramserver.pserver.sparse;

import java.time.Duration;

/**
 * Limits of one sparse table.
 *
 * @param maxRows rows the table holds at most before it evicts; {@link Long#MAX_VALUE} for no cap
 * @param budget bytes shared by all sparse tables of the pserver, or null for no shared cap
 * @param policy which rows go first when the table is full (and when TTL rows expire)
 * @param sample rows examined to pick one to evict (more is closer to exact, and slower)
 * @param admissionThreshold pushes an id needs before it gets a row; 1 admits every id
 * @param sketchWidth counters per hash row of the admission sketch (of the whole table)
 */
public record TableSettings(
    long maxRows,
    SparseBudget budget,
    EvictionPolicy policy,
    int sample,
    int admissionThreshold,
    int sketchWidth) {

  public TableSettings {
    if (maxRows < 1) {
      throw new IllegalArgumentException("max rows must be >= 1, got " + maxRows);
    }
    if (policy == null) {
      throw new IllegalArgumentException("an eviction policy is needed");
    }
    if (sample < 1 || sample > 64) {
      throw new IllegalArgumentException("eviction sample must be in [1, 64], got " + sample);
    }
    if (admissionThreshold < 1 || admissionThreshold > 255) {
      throw new IllegalArgumentException(
          "admission threshold must be in [1, 255], got " + admissionThreshold);
    }
  }

  /** No cap, no admission: every pushed id gets a row and keeps it. */
  public static TableSettings unlimited() {
    return new TableSettings(
        Long.MAX_VALUE, null, EvictionPolicy.lfu(Duration.ofMinutes(10)), 16, 1, 1 << 16);
  }

  boolean capped() {
    return maxRows != Long.MAX_VALUE || budget != null;
  }
}
