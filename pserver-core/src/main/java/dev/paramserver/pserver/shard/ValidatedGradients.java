package dev.paramserver.pserver.shard;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Applying validated gradients, and summing several trainers' gradients (synchronous step). */
final class ValidatedGradients {
  private ValidatedGradients() {}

  /** Applies validated gradients block by block (each under its lock). */
  static void apply(ValidatedPush push) {
    for (ValidatedPush.DenseGradient g : push.dense) {
      g.block().apply(g.gradient());
    }
    for (ValidatedPush.SparseGradient g : push.sparse) {
      if (g.cut() != null) {
        g.table().apply(g.rowIds(), g.gradient(), g.after(), g.cut());
      } else {
        g.table().apply(g.rowIds(), g.gradient(), g.after());
      }
    }
  }

  /** One push holding, per block and sparse row, the sum of the pushes' gradients. */
  static ValidatedPush sum(List<ValidatedPush> pushes) {
    Map<DenseBlock, float[]> dense = new IdentityHashMap<>();
    Map<SparseTable, Map<Long, float[]>> sparse = new IdentityHashMap<>();
    for (ValidatedPush p : pushes) {
      for (ValidatedPush.DenseGradient g : p.dense) {
        float[] sum = dense.get(g.block());
        if (sum == null) {
          dense.put(g.block(), g.gradient().clone());
        } else {
          addInto(sum, 0, g.gradient(), 0, sum.length);
        }
      }
      for (ValidatedPush.SparseGradient g : p.sparse) {
        int width = g.table().width();
        Map<Long, float[]> rows = sparse.computeIfAbsent(g.table(), t -> new TreeMap<>());
        for (int i = 0; i < g.rowIds().length; i++) {
          float[] sum = rows.computeIfAbsent(g.rowIds()[i], id -> new float[width]);
          addInto(sum, 0, g.gradient(), i * width, width);
        }
      }
    }
    List<ValidatedPush.DenseGradient> denseSums = new ArrayList<>();
    dense.forEach((b, g) -> denseSums.add(new ValidatedPush.DenseGradient(b, g)));
    List<ValidatedPush.SparseGradient> sparseSums = new ArrayList<>();
    sparse.forEach(
        (t, rows) -> {
          int width = t.width();
          long[] ids = new long[rows.size()];
          float[] data = new float[rows.size() * width];
          int i = 0;
          for (Map.Entry<Long, float[]> e : rows.entrySet()) {
            ids[i] = e.getKey();
            System.arraycopy(e.getValue(), 0, data, i * width, width);
            i++;
          }
          sparseSums.add(new ValidatedPush.SparseGradient(t, ids, data, null));
        });
    return new ValidatedPush(denseSums, sparseSums);
  }

  private static void addInto(float[] dst, int dstOff, float[] src, int srcOff, int n) {
    for (int i = 0; i < n; i++) {
      dst[dstOff + i] += src[srcOff + i];
    }
  }
}
