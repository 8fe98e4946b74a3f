package dev.paramserver.trainer.pserver;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The sparse rows a pull asks for, by table (distinct ids), with the writer tag of the trainer
 * asking: of each table the first {@link #held} ids are rows the trainer holds a value of, which
 * its pservers may leave out of the answer when only this writer changed them ({@code
 * PullParametersRequest.writer_tag}, {@code SparseRowsRef.held}).
 */
public final class RowWants {
  private final Map<String, long[]> ids = new LinkedHashMap<>();
  private final Map<String, Integer> held = new HashMap<>();
  private final int writerTag;
  private long rows;

  /**
   * @param writerTag the trainer's writer tag now (0: none, every row is answered)
   */
  public RowWants(int writerTag) {
    this.writerTag = writerTag;
  }

  /** Rows {@code ids} of {@code table}, none held, without a writer tag. */
  public static RowWants of(Map<String, long[]> ids) {
    RowWants out = new RowWants(0);
    ids.forEach((table, wanted) -> out.put(table, wanted, 0));
    return out;
  }

  /**
   * Asks for rows {@code wanted} of {@code table}, of which the first {@code heldRows} are held.
   */
  public void put(String table, long[] wanted, int heldRows) {
    if (heldRows < 0 || heldRows > wanted.length) {
      throw new IllegalArgumentException(
          "held " + heldRows + " of " + wanted.length + " rows of " + table);
    }
    long[] before = ids.put(table, wanted);
    rows += wanted.length - (before == null ? 0 : before.length);
    held.put(table, heldRows);
  }

  /** The ids asked for, by table (read only). */
  public Map<String, long[]> ids() {
    return Collections.unmodifiableMap(ids);
  }

  /** How many of the ids of {@code table} (the first ones) are rows the trainer holds. */
  public int held(String table) {
    return held.getOrDefault(table, 0);
  }

  public int writerTag() {
    return writerTag;
  }

  public boolean isEmpty() {
    return ids.isEmpty();
  }

  /** The rows asked for, every table. */
  public long rows() {
    return rows;
  }

  /** The ids of {@code table} asked for, or null. */
  public long[] get(String table) {
    return ids.get(table);
  }
}
