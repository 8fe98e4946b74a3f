package dev.paramserver.trainer.pserver;

import java.util.Arrays;
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
  private final Map<String, HeldSlots> heldSlots = new HashMap<>();
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

  /**
   * Where the asker's cache found the held rows of a table ({@code slots[i]} for the i-th held id),
   * valid while the cache's layout is {@code layout}.
   */
  public record HeldSlots(int[] slots, long layout) {}

  /** Records where the held rows of {@code table} were found (at least {@link #held} slots). */
  public void heldSlots(String table, int[] slots, long layout) {
    heldSlots.put(table, new HeldSlots(slots, layout));
  }

  /** Where the held rows of {@code table} were found, or null. */
  public HeldSlots heldSlots(String table) {
    return heldSlots.get(table);
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

  /**
   * These rows and {@code other}'s (asked under the same tag, none asked by both) in one: of each
   * table, both held parts first.
   */
  public RowWants plus(RowWants other) {
    if (other.writerTag != writerTag) {
      throw new IllegalArgumentException("rows asked under two writer tags");
    }
    RowWants out = new RowWants(writerTag);
    ids.forEach((table, a) -> out.put(table, a, held(table)));
    out.heldSlots.putAll(heldSlots);
    other.ids.forEach(
        (table, b) -> {
          long[] a = out.ids.get(table);
          if (a == null) {
            out.put(table, b, other.held(table));
            if (other.heldSlots(table) != null) {
              out.heldSlots.put(table, other.heldSlots(table));
            }
            return;
          }
          int ha = out.held(table);
          int hb = other.held(table);
          long[] both = new long[a.length + b.length];
          System.arraycopy(a, 0, both, 0, ha);
          System.arraycopy(b, 0, both, ha, hb);
          System.arraycopy(a, ha, both, ha + hb, a.length - ha);
          System.arraycopy(b, hb, both, a.length + hb, b.length - hb);
          out.put(table, both, ha + hb);
          HeldSlots sa = out.heldSlots.remove(table);
          HeldSlots sb = other.heldSlots(table);
          if (sa != null && sb != null && sa.layout() == sb.layout()) {
            int[] slots = Arrays.copyOf(sa.slots(), ha + hb);
            System.arraycopy(sb.slots(), 0, slots, ha, hb);
            out.heldSlots(table, slots, sa.layout());
          }
        });
    return out;
  }

  /** The ids of {@code table} asked for, or null. */
  public long[] get(String table) {
    return ids.get(table);
  }
}
