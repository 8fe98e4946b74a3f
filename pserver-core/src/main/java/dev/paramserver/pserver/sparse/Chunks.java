package dev.paramserver.pserver.sparse;

import java.util.Arrays;

/** Cuts a stripe's copied rows into {@link SparseRowStore.Chunk}s (snapshots). */
final class Chunks {
  private Chunks() {}

  static SparseRowStore.Chunk cut(
      long[] ids,
      float[] floats,
      int[] counts,
      long[] scores,
      int from,
      int to,
      int stride,
      int width,
      int slotCount) {
    int n = to - from;
    float[] values = new float[n * width];
    float[][] slots = new float[slotCount][n * width];
    long[] updates = new long[n];
    for (int r = 0; r < n; r++) {
      int o = (from + r) * stride;
      System.arraycopy(floats, o, values, r * width, width);
      for (int k = 0; k < slots.length; k++) {
        System.arraycopy(floats, o + (k + 1) * width, slots[k], r * width, width);
      }
      updates[r] = Integer.toUnsignedLong(counts[from + r]);
    }
    return new SparseRowStore.Chunk(
        Arrays.copyOfRange(ids, from, to),
        values,
        slots,
        updates,
        Arrays.copyOfRange(scores, from, to),
        n);
  }
}
