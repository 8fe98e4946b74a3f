package dev.paramserver.pserver.sparse;

import java.util.ArrayList;
import java.util.List;

/**
 * The admission sketch of a table: the counters of each stripe's sketch and how many increments
 * each saw since it last aged, as checkpoints and copies carry them.
 */
public record TableSketch(List<byte[]> counters, long[] increments) {

  /**
   * Each stripe's sketch read under its stripe's lock (a checkpoint or a copy is cut under the
   * shard's write lock, so no push changes it meanwhile), or null without admission.
   */
  static TableSketch of(Stripe[] stripes) {
    if (stripes[0].sketch == null) {
      return null;
    }
    List<byte[]> counters = new ArrayList<>();
    long[] increments = new long[stripes.length];
    for (Stripe s : stripes) {
      s.lock.readLock().lock();
      try {
        counters.add(s.sketch.counters());
        increments[s.number] = s.sketch.increments();
      } finally {
        s.lock.readLock().unlock();
      }
    }
    return new TableSketch(counters, increments);
  }

  /**
   * Takes a saved sketch (a checkpoint's or a copy's) when it has the table's shape (as many
   * stripes, counters of the same width); otherwise the sketch stays as it is (empty after a
   * restart: only admission is delayed, never a row lost).
   */
  static boolean restore(Stripe[] stripes, List<byte[]> counters, List<Long> increments) {
    if (stripes[0].sketch == null
        || counters.size() != stripes.length
        || increments.size() != stripes.length) {
      return false;
    }
    for (Stripe s : stripes) {
      if (counters.get(s.number).length != s.sketch.bytes()) {
        return false;
      }
    }
    for (Stripe s : stripes) {
      s.lock.writeLock().lock();
      try {
        s.sketch.restore(counters.get(s.number), increments.get(s.number));
      } finally {
        s.lock.writeLock().unlock();
      }
    }
    return true;
  }
}
