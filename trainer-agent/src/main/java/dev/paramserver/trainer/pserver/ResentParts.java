package dev.paramserver.trainer.pserver;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Part numbers for the pieces of refused requests (docs/explanation/elastic.md, "Trainers"). A
 * piece resent after MOVED keeps its step and origin but gets a part of its own, {@link #FIRST} or
 * above, never given twice for one step: two pieces of one step can reach one server (a piece
 * refused again and cut anew), and the second must not be taken for a duplicate of the first.
 * Requests planned as usual are numbered from 0, far below.
 */
final class ResentParts {
  /** The first part number a resent piece gets: the upper half of a step's parts (0..65535). */
  static final int FIRST = 1 << 15;

  private static final int LAST = (1 << 16) - 1;

  // steps in flight are bounded by the push window (1024): the oldest counters go first
  private static final int STEPS = 1 << 14;

  private final Map<Long, Integer> next =
      new LinkedHashMap<>(64, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Integer> eldest) {
          return size() > STEPS;
        }
      };

  /** A part number not given before for {@code step}. */
  synchronized int next(long step) {
    int part = next.getOrDefault(step, FIRST);
    if (part > LAST) {
      throw new IllegalStateException(
          "step "
              + step
              + " was cut into more than "
              + (LAST - FIRST + 1)
              + " resent pieces: its placement keeps moving");
    }
    next.put(step, part + 1);
    return part;
  }
}
