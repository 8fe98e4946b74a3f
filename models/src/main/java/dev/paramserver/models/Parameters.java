package dev.paramserver.models;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Parameter values by name: dense parameters as flat float arrays, sparse tables as rows by id. Not
 * thread-safe.
 */
public final class Parameters {
  private final Map<String, float[]> dense = new LinkedHashMap<>();
  private final Map<String, SparseTable> sparse = new LinkedHashMap<>();

  /**
   * Rows of a sparse table by id, created on demand: an open-addressing table of primitive ids (no
   * boxing, no entry objects), one {@code float[width]} per row. Not thread-safe.
   */
  public static final class SparseTable {
    private static final long EMPTY = Long.MIN_VALUE;
    private final int width;
    // slots: ids (EMPTY marks a free slot; id Long.MIN_VALUE itself is kept in minRow) and rows
    private long[] keys;
    private float[][] vals;
    private int size;
    private float[] minRow;

    public SparseTable(int width) {
      this.width = width;
      this.keys = newKeys(16);
      this.vals = new float[16][];
    }

    private static long[] newKeys(int n) {
      long[] k = new long[n];
      Arrays.fill(k, EMPTY);
      return k;
    }

    public int width() {
      return width;
    }

    /** Rows held. */
    public int size() {
      return size;
    }

    public boolean isEmpty() {
      return size == 0;
    }

    private static int mix(long id) {
      long h = id * 0x9E3779B97F4A7C15L;
      return (int) (h ^ (h >>> 32));
    }

    private int slot(long id) {
      int mask = keys.length - 1;
      int i = mix(id) & mask;
      while (true) {
        long k = keys[i];
        if (k == id || k == EMPTY) {
          return i;
        }
        i = (i + 1) & mask;
      }
    }

    /** The row, created as zeros if absent (one probe either way). */
    public float[] row(long id) {
      if (id == EMPTY) {
        if (minRow == null) {
          minRow = new float[width];
          size++;
        }
        return minRow;
      }
      int i = slot(id);
      if (keys[i] == id) {
        return vals[i];
      }
      float[] r = new float[width];
      addAt(i, id, r);
      return r;
    }

    /**
     * Puts a copy of {@code values} (of the table's width) as row {@code id} unless the table has
     * that row already (one probe either way).
     *
     * @return whether it was put
     */
    public boolean putCopyIfAbsent(long id, float[] values) {
      if (id == EMPTY) {
        if (minRow != null) {
          return false;
        }
        minRow = Arrays.copyOf(values, width);
        size++;
        return true;
      }
      int i = slot(id);
      if (keys[i] == id) {
        return false;
      }
      addAt(i, id, Arrays.copyOf(values, width));
      return true;
    }

    // adds id, absent, at its free slot i
    private void addAt(int i, long id, float[] values) {
      keys[i] = id;
      vals[i] = values;
      size++;
      if (size * 2L > keys.length) {
        grow();
      }
    }

    /** The row, or null if absent. */
    public float[] rowOrNull(long id) {
      if (id == EMPTY) {
        return minRow;
      }
      int i = slot(id);
      return keys[i] == id ? vals[i] : null;
    }

    public boolean contains(long id) {
      return rowOrNull(id) != null;
    }

    public void put(long id, float[] values) {
      if (values.length != width) {
        throw new IllegalArgumentException(
            "row " + id + " has " + values.length + " values, the table's width is " + width);
      }
      insert(id, values);
    }

    private void insert(long id, float[] values) {
      if (id == EMPTY) {
        if (minRow == null) {
          size++;
        }
        minRow = values;
        return;
      }
      int i = slot(id);
      if (keys[i] != id) {
        keys[i] = id;
        size++;
        if (size * 2L > keys.length) {
          vals[i] = values;
          grow();
          return;
        }
      }
      vals[i] = values;
    }

    private void grow() {
      long[] oldKeys = keys;
      float[][] oldVals = vals;
      keys = newKeys(oldKeys.length * 2);
      vals = new float[oldKeys.length * 2][];
      for (int i = 0; i < oldKeys.length; i++) {
        if (oldKeys[i] != EMPTY) {
          int j = slot(oldKeys[i]);
          keys[j] = oldKeys[i];
          vals[j] = oldVals[i];
        }
      }
    }

    /** Removes the row; returns it, or null if absent. */
    public float[] remove(long id) {
      if (id == EMPTY) {
        float[] r = minRow;
        if (r != null) {
          minRow = null;
          size--;
        }
        return r;
      }
      int i = slot(id);
      if (keys[i] != id) {
        return null;
      }
      float[] r = vals[i];
      // backward-shift deletion keeps every probe run unbroken
      int mask = keys.length - 1;
      int hole = i;
      int j = (i + 1) & mask;
      while (keys[j] != EMPTY) {
        int home = mix(keys[j]) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
          keys[hole] = keys[j];
          vals[hole] = vals[j];
          hole = j;
        }
        j = (j + 1) & mask;
      }
      keys[hole] = EMPTY;
      vals[hole] = null;
      size--;
      return r;
    }

    /** The ids held, in no particular order. */
    public long[] ids() {
      long[] out = new long[size];
      int n = 0;
      if (minRow != null) {
        out[n++] = EMPTY;
      }
      for (long k : keys) {
        if (k != EMPTY) {
          out[n++] = k;
        }
      }
      return out;
    }

    /** The ids held, ascending. */
    public long[] sortedIds() {
      long[] out = ids();
      Arrays.sort(out);
      return out;
    }

    /** A row and its id. */
    @FunctionalInterface
    public interface RowConsumer {
      void accept(long id, float[] row);
    }

    /** Calls {@code each} for every row, in no particular order (no row may be added meanwhile). */
    public void forEach(RowConsumer each) {
      if (minRow != null) {
        each.accept(EMPTY, minRow);
      }
      for (int i = 0; i < keys.length; i++) {
        if (keys[i] != EMPTY) {
          each.accept(keys[i], vals[i]);
        }
      }
    }

    /** Removes every row (keeping the capacity). */
    public void clear() {
      if (size > 0) {
        Arrays.fill(keys, EMPTY);
        Arrays.fill(vals, null);
        minRow = null;
        size = 0;
      }
    }
  }

  /** An all-zero set shaped like the model's parameters (sparse tables empty). */
  public static Parameters zerosLike(Model model) {
    Parameters p = new Parameters();
    for (ParameterDef def : model.parameters()) {
      if (def.sparse()) {
        p.sparse.put(def.name(), new SparseTable(def.width()));
      } else {
        p.dense.put(def.name(), new float[Math.toIntExact(def.elements())]);
      }
    }
    return p;
  }

  public float[] dense(String name) {
    float[] v = dense.get(name);
    if (v == null) {
      throw new IllegalArgumentException("no dense parameter '" + name + "'");
    }
    return v;
  }

  public void putDense(String name, float[] values) {
    dense.put(name, values);
  }

  public SparseTable sparse(String name) {
    SparseTable t = sparse.get(name);
    if (t == null) {
      throw new IllegalArgumentException("no sparse table '" + name + "'");
    }
    return t;
  }

  public void putSparse(String name, SparseTable table) {
    sparse.put(name, table);
  }

  public Set<String> denseNames() {
    return dense.keySet();
  }

  public Set<String> sparseNames() {
    return sparse.keySet();
  }

  /** Sets every dense value to zero and empties the sparse tables. */
  public void clear() {
    for (float[] v : dense.values()) {
      Arrays.fill(v, 0f);
    }
    for (SparseTable t : sparse.values()) {
      t.clear();
    }
  }
}
