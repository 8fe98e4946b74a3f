package dev.paramserver.pserver.sparse;

import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongPredicate;

/**
 * Drops the rows of slots that moved to another pserver (elastic placement) from a {@link
 * SparseRowStore}, stripe by stripe under each stripe's write lock. Not evictions: the table did
 * not choose them, so the eviction counter is left as it was.
 */
final class MovedRows {
  private MovedRows() {}

  /** Removes one row of a stripe whose write lock the caller holds (counting an eviction). */
  interface Remover {
    void remove(Stripe s, int slot);
  }

  static long remove(Stripe[] stripes, LongPredicate drop, Remover remover, LongAdder evictions) {
    long n = 0;
    for (Stripe s : stripes) {
      s.lock.writeLock().lock();
      try {
        for (int slot = s.slab.size() - 1; slot >= 0; slot--) {
          if (drop.test(s.slab.key(slot))) {
            remover.remove(s, slot);
            evictions.decrement();
            n++;
          }
        }
      } finally {
        s.lock.writeLock().unlock();
      }
    }
    return n;
  }
}
