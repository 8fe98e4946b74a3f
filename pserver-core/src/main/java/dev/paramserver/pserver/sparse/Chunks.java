package dev.paramserver.pserver.sparse;

import java.util.Arrays;

/** Copies a table's stripes out for a snapshot and cuts them into {@link SparseRowStore.Chunk}s. */
final class Chunks {
  private Chunks() {}

  /** {@link SparseRowStore#snapshot}: the stripes' rows, copied one stripe at a time. */
  static void snapshot(
      Stripe[] stripes,
      EvictionPolicy policy,
      long now,
      int chunkRows,
      int width,
      float[] slotInit,
      SparseRowStore.ChunkSink sink) {
    for (Stripe s : stripes) {
      long[] ids;
      float[] floats;
      int[] counts;
      long[] scores;
      int n;
      int stride = s.slab.stride;
      s.lock.readLock().lock();
      try {
        n = s.slab.size();
        ids = new long[n];
        floats = new float[n * stride];
        counts = new int[n];
        scores = new long[n];
        int kept = 0;
        for (int slot = 0; slot < n; slot++) {
          if (policy.expired(s.slab.meta(slot), now)) {
            continue;
          }
          ids[kept] = s.slab.key(slot);
          System.arraycopy(
              s.slab.floatChunk(slot), s.slab.offset(slot), floats, kept * stride, stride);
          counts[kept] = s.slab.updates(slot);
          scores[kept] = policy.score(s.slab.meta(slot), now);
          kept++;
        }
        n = kept;
      } finally {
        s.lock.readLock().unlock();
      }
      for (int from = 0; from < n; from += chunkRows) {
        sink.accept(
            cut(
                ids,
                floats,
                counts,
                scores,
                from,
                Math.min(n, from + chunkRows),
                stride,
                width,
                slotInit.length));
      }
    }
  }

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
