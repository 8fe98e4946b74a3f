package dev.paramserver.trainer.training;

import dev.paramserver.models.Parameters;
import dev.paramserver.optimizers.ParameterOptimizer;

/** One cached table: its rows and what is known of them, its optimizer and that one's state. */
final class CachedTable {
  final String name;
  final int index;
  final int width;
  final RowMeta rows = new RowMeta();
  final ParameterOptimizer optimizer;
  final Parameters.SparseTable[] slots;
  final float[] scratch;
  final int rowBytes;
  long steps;

  CachedTable(String name, int index, int width, ParameterOptimizer optimizer) {
    this.name = name;
    this.index = index;
    this.width = width;
    this.optimizer = optimizer;
    this.slots = new Parameters.SparseTable[optimizer.slots()];
    for (int i = 0; i < slots.length; i++) {
      slots[i] = new Parameters.SparseTable(width);
    }
    this.scratch = new float[width];
    this.rowBytes = RowCache.ROW_OVERHEAD_BYTES + 4 * width * (1 + slots.length);
  }
}
