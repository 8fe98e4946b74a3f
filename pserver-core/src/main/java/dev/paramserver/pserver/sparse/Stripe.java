package dev.paramserver.pserver.sparse;

import java.util.concurrent.locks.ReentrantReadWriteLock;

/** One stripe of a {@link SparseRowStore}: its rows, their index and its admission sketch. */
final class Stripe {
  final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  final RowSlab slab;
  final LongSlotIndex index;
  final AdmissionSketch sketch;
  final int number;
  int cursor;

  Stripe(int number, int stride, AdmissionSketch sketch) {
    this.number = number;
    this.slab = new RowSlab(stride);
    this.index = new LongSlotIndex(slab);
    this.sketch = sketch;
  }
}
