package dev.paramserver.models;

import dev.paramserver.proto.v1.Example;
import java.util.List;

/**
 * A mini-batch in flat arrays: dense features row-major ({@code size x features}), labels, and
 * sparse features in CSR form ({@code sparseStart[i]..sparseStart[i+1]} index the ids and values of
 * example i).
 */
public final class Batch {
  private final int size;
  private final int features;
  private final float[] dense;
  private final int[] labels;
  private final int[] sparseStart;
  private final long[] sparseIds;
  private final float[] sparseValues;

  public Batch(
      int size,
      int features,
      float[] dense,
      int[] labels,
      int[] sparseStart,
      long[] sparseIds,
      float[] sparseValues) {
    this.size = size;
    this.features = features;
    this.dense = dense;
    this.labels = labels;
    this.sparseStart = sparseStart;
    this.sparseIds = sparseIds;
    this.sparseValues = sparseValues;
  }

  /**
   * Builds a batch from examples; every example must have exactly {@code features} dense values.
   *
   * @throws IllegalArgumentException naming the example that does not fit
   */
  public static Batch of(List<Example> examples, int features) {
    int n = examples.size();
    float[] dense = new float[n * features];
    int[] labels = new int[n];
    int[] start = new int[n + 1];
    int nnz = 0;
    for (Example e : examples) {
      nnz += e.getSparseIdsCount();
    }
    long[] ids = new long[nnz];
    float[] vals = new float[nnz];
    int k = 0;
    for (int i = 0; i < n; i++) {
      Example e = examples.get(i);
      if (e.getDenseCount() != features) {
        throw new IllegalArgumentException(
            "example "
                + i
                + " of the batch has "
                + e.getDenseCount()
                + " dense features, the model expects "
                + features);
      }
      for (int j = 0; j < features; j++) {
        dense[i * features + j] = e.getDense(j);
      }
      labels[i] = e.getLabel();
      start[i] = k;
      int m = e.getSparseIdsCount();
      boolean hasValues = e.getSparseValuesCount() == m;
      for (int j = 0; j < m; j++) {
        ids[k] = e.getSparseIds(j);
        vals[k] = hasValues ? e.getSparseValues(j) : 1f;
        k++;
      }
    }
    start[n] = k;
    return new Batch(n, features, dense, labels, start, ids, vals);
  }

  public int size() {
    return size;
  }

  public int features() {
    return features;
  }

  public float[] dense() {
    return dense;
  }

  public int[] labels() {
    return labels;
  }

  public int[] sparseStart() {
    return sparseStart;
  }

  public long[] sparseIds() {
    return sparseIds;
  }

  public float[] sparseValues() {
    return sparseValues;
  }
}
