package dev.paramserver.pserver.sparse;

import java.util.Map;

/**
 * Limits of the sparse tables of one pserver: a default row cap per table, per-table overrides, a
 * byte budget shared by all tables, the eviction policy and the admission threshold.
 *
 * @param maxRows row cap of each table without an override; {@link Long#MAX_VALUE} for none
 * @param tables per-table caps by table name
 * @param budget the pserver's byte budget for all sparse tables, or null for none
 * @param policy eviction policy of every table
 * @param sample rows sampled per eviction
 * @param admissionThreshold pushes an id needs before it gets a row (1: admit at once)
 * @param sketchWidth counters per hash row of each table's admission sketch
 */
public record SparseSettings(
    long maxRows,
    Map<String, TableCap> tables,
    SparseBudget budget,
    EvictionPolicy policy,
    int sample,
    int admissionThreshold,
    int sketchWidth) {

  /** A per-table cap; {@link Long#MAX_VALUE} in a field means no cap of that kind. */
  public record TableCap(long maxRows, long maxBytes) {}

  public SparseSettings {
    tables = Map.copyOf(tables);
  }

  /** No caps and no admission: every table grows with the ids pushed. */
  public static SparseSettings unlimited() {
    TableSettings t = TableSettings.unlimited();
    return new SparseSettings(
        Long.MAX_VALUE, Map.of(), null, t.policy(), t.sample(), 1, t.sketchWidth());
  }

  /** The settings of table {@code name}, whose rows take {@code rowBytes} each. */
  public TableSettings forTable(String name, long rowBytes) {
    long cap = maxRows;
    TableCap own = tables.get(name);
    if (own != null) {
      cap = Math.min(own.maxRows(), Math.max(1, own.maxBytes() / rowBytes));
    }
    return new TableSettings(cap, budget, policy, sample, admissionThreshold, sketchWidth);
  }

  /**
   * Bytes a row of {@code width} floats with {@code slots} optimizer slots counts against a cap.
   */
  public static long rowBytes(int width, int slots) {
    return SparseRowStore.ROW_OVERHEAD_BYTES + 4L * width * (1 + slots);
  }
}
