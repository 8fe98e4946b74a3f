package dev.paramserver.pserver.sparse;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class LongSlotIndexTest {

  /** Ids stored by slot, as a slab stores them, with dense removal by moving the last one. */
  private static final class Ids implements LongSlotIndex.Keys {
    final List<Long> ids = new ArrayList<>();
    final LongSlotIndex index = new LongSlotIndex(this);

    @Override
    public long key(int slot) {
      return ids.get(slot);
    }

    void add(long id) {
      ids.add(id);
      index.put(id, ids.size() - 1);
    }

    void remove(long id) {
      int slot = index.get(id);
      index.remove(id);
      long last = ids.get(ids.size() - 1);
      if (last != id) {
        index.move(last, slot);
        ids.set(slot, last);
      }
      ids.remove(ids.size() - 1);
    }
  }

  /** Ids that all hash to bucket 0 of a 16-bucket index. */
  private static long[] colliding(int n) {
    long[] out = new long[n];
    int found = 0;
    for (long id = 0; found < n; id++) {
      if ((LongSlotIndex.mix(id) & 15) == 0) {
        out[found++] = id;
      }
    }
    return out;
  }

  @Test
  void collidingIds_areAllFound_andRemovingFromTheMiddleOfTheRunKeepsTheRest() {
    Ids t = new Ids();
    long[] ids = colliding(10);
    for (long id : ids) {
      t.add(id);
    }
    assertThat(t.index.capacity()).isEqualTo(16);
    for (int i = 0; i < ids.length; i++) {
      assertThat(t.ids.get(t.index.get(ids[i]))).isEqualTo(ids[i]);
    }
    t.remove(ids[3]);
    t.remove(ids[0]);
    assertThat(t.index.get(ids[3])).isEqualTo(-1);
    assertThat(t.index.get(ids[0])).isEqualTo(-1);
    for (int i : new int[] {1, 2, 4, 5, 6, 7, 8, 9}) {
      assertThat(t.ids.get(t.index.get(ids[i]))).isEqualTo(ids[i]);
    }
    assertThat(t.index.size()).isEqualTo(8);
  }

  @Test
  void growth_keepsEveryIdAndTheLoadFactorBelowThreeQuarters() {
    Ids t = new Ids();
    for (long id = 0; id < 100_000; id++) {
      t.add(id * 7919);
    }
    assertThat(t.index.size()).isEqualTo(100_000);
    assertThat(t.index.capacity()).isEqualTo(1 << 18);
    assertThat(100_000 * 4L).isLessThanOrEqualTo(t.index.capacity() * 3L);
    for (long id = 0; id < 100_000; id++) {
      assertThat(t.index.get(id * 7919)).isEqualTo((int) id);
    }
    assertThat(t.index.get(5)).isEqualTo(-1);
  }

  @Test
  void randomInsertsAndDeletes_agreeWithAHashMap() {
    Ids t = new Ids();
    Map<Long, Boolean> model = new HashMap<>();
    SplittableRandom random = new SplittableRandom(42);
    for (int op = 0; op < 200_000; op++) {
      // A small id range makes long probe runs and many deletes inside them.
      long id = random.nextLong(5_000) - 2_500;
      if (model.containsKey(id)) {
        t.remove(id);
        model.remove(id);
      } else {
        t.add(id);
        model.put(id, true);
      }
    }
    assertThat(t.index.size()).isEqualTo(model.size());
    for (long id = -2_500; id < 2_500; id++) {
      int slot = t.index.get(id);
      if (model.containsKey(id)) {
        assertThat(t.ids.get(slot)).isEqualTo(id);
      } else {
        assertThat(slot).isEqualTo(-1);
      }
    }
  }

  @Test
  void clear_forgetsEverything() {
    Ids t = new Ids();
    for (long id = 0; id < 100; id++) {
      t.add(id);
    }
    t.index.clear();
    assertThat(t.index.size()).isZero();
    assertThat(t.index.capacity()).isEqualTo(16);
    assertThat(t.index.get(3)).isEqualTo(-1);
  }
}
