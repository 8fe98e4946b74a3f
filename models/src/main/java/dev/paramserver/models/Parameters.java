package dev.paramserver.models;

import java.util.Arrays;
import java.util.HashMap;
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

  /** Rows of a sparse table, created on demand. */
  public static final class SparseTable {
    private final int width;
    private final Map<Long, float[]> rows = new HashMap<>();

    public SparseTable(int width) {
      this.width = width;
    }

    public int width() {
      return width;
    }

    /** The row, created as zeros if absent. */
    public float[] row(long id) {
      return rows.computeIfAbsent(id, k -> new float[width]);
    }

    /** The row, or null if absent. */
    public float[] rowOrNull(long id) {
      return rows.get(id);
    }

    public void put(long id, float[] values) {
      if (values.length != width) {
        throw new IllegalArgumentException(
            "row " + id + " has " + values.length + " values, the table's width is " + width);
      }
      rows.put(id, values);
    }

    public Map<Long, float[]> rows() {
      return rows;
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
      t.rows.clear();
    }
  }
}
