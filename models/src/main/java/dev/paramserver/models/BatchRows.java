package dev.paramserver.models;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A batch's sparse rows resolved once: each distinct id of {@link Batch#sparseIds()} has a dense
 * batch-local index {@code 0..count()-1}, each occurrence of an id its index ({@link #local()}),
 * and each sparse table two flat arrays by that index: the row values ({@link #values}, the arrays
 * of whoever holds the rows, read in place) and the gradient accumulators ({@link #grads}, {@code
 * count() x width} floats, zeroed by {@link #reset}). A model that reads its sparse rows here
 * ({@link Model#trainStep(Parameters, Batch, BatchRows, Parameters)}) finds a row with an array
 * index instead of a hash probe per occurrence.
 */
public final class BatchRows {
  /** One sparse table's rows and gradients, by batch-local index. */
  public static final class Table {
    private final String name;
    private final int width;
    private float[][] values = new float[0][];
    private float[] grads = new float[0];

    Table(String name, int width) {
      this.name = name;
      this.width = width;
    }

    public String name() {
      return name;
    }

    public int width() {
      return width;
    }

    /** Row {@code k}'s values (null: the row is unknown, read as zeros), by batch-local index. */
    public float[][] values() {
      return values;
    }

    /** The gradient of row {@code k} at {@code k * width}, by batch-local index. */
    public float[] grads() {
      return grads;
    }
  }

  private final Map<String, Table> tables = new LinkedHashMap<>();
  private final Table[] order;
  private long[] ids = new long[0];
  private int[] local = new int[0];
  private int count;

  /** Rows of the sparse tables {@code names}, of widths {@code widths} (same order). */
  public BatchRows(List<String> names, int[] widths) {
    if (names.size() != widths.length) {
      throw new IllegalArgumentException(
          names.size() + " sparse tables named but " + widths.length + " widths given");
    }
    order = new Table[widths.length];
    for (int t = 0; t < widths.length; t++) {
      order[t] = new Table(names.get(t), widths[t]);
      tables.put(names.get(t), order[t]);
    }
  }

  /**
   * A new batch: {@code count} distinct ids ({@code ids}, by local index) and the local index of
   * each occurrence of the batch's ids ({@code local}); gradients zeroed, values left to be set.
   * The arrays are kept, not copied.
   */
  public void reset(long[] ids, int count, int[] local) {
    this.ids = ids;
    this.count = count;
    this.local = local;
    for (Table t : order) {
      if (t.values.length < count) {
        t.values = new float[Math.max(count, 2 * t.values.length)][];
      }
      int n = count * t.width;
      if (t.grads.length < n) {
        t.grads = new float[Math.max(n, 2 * t.grads.length)];
      } else {
        Arrays.fill(t.grads, 0, n, 0f);
      }
    }
  }

  /** The distinct ids of the batch. */
  public int count() {
    return count;
  }

  /** The distinct ids, by local index (the first {@link #count()} hold). */
  public long[] ids() {
    return ids;
  }

  /** The local index of each occurrence in {@link Batch#sparseIds()}, same positions. */
  public int[] local() {
    return local;
  }

  /** The table {@code name}. */
  public Table table(String name) {
    Table t = tables.get(name);
    if (t == null) {
      throw new IllegalArgumentException(
          "no sparse table '" + name + "' among the batch's rows " + tables.keySet());
    }
    return t;
  }

  /** Table {@code t} in the order the tables were named. */
  public Table table(int t) {
    return order[t];
  }

  /** How many tables. */
  public int tables() {
    return order.length;
  }
}
