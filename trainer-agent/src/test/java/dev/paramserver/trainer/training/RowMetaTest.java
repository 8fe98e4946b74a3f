package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RowMetaTest {
  /** What the table should hold of an id: its fields and row. */
  private record Held(int read, int used, float[] row) {}

  @Test
  void addsRemovesAndFields_matchAPlainMap_throughGrowthAndBackwardShifts() {
    RowMeta meta = new RowMeta();
    Map<Long, Held> expected = new HashMap<>();
    SplittableRandom r = new SplittableRandom(7);
    for (int op = 0; op < 200_000; op++) {
      // a narrow id range, so that removes and re-adds hit, with the empty marker among them
      long id = r.nextInt(10) == 0 ? Long.MIN_VALUE : r.nextLong(5_000) * 1_024;
      switch (r.nextInt(4)) {
        case 0, 1 -> {
          int s = meta.add(id);
          Held h = expected.get(id);
          if (h == null) {
            assertThat(meta.get(s, RowMeta.READ)).isEqualTo(Integer.MIN_VALUE);
            assertThat(meta.get(s, RowMeta.USED)).isEqualTo(Integer.MIN_VALUE);
            assertThat(meta.row(s)).isNull();
          }
          int read = r.nextInt(), used = r.nextInt();
          float[] row = r.nextBoolean() ? new float[] {r.nextFloat()} : null;
          meta.set(s, RowMeta.READ, read);
          meta.set(s, RowMeta.USED, used);
          meta.setRow(s, row);
          expected.put(id, new Held(read, used, row));
        }
        case 2 -> assertThat(meta.remove(id)).isEqualTo(expected.remove(id) != null);
        default -> {
          int s = meta.slot(id);
          Held h = expected.get(id);
          if (h == null) {
            assertThat(s).isEqualTo(-1);
          } else {
            assertThat(meta.get(s, RowMeta.READ)).isEqualTo(h.read());
            assertThat(meta.get(s, RowMeta.USED)).isEqualTo(h.used());
            assertThat(meta.row(s)).isSameAs(h.row());
          }
        }
      }
      assertThat(meta.size()).isEqualTo(expected.size());
    }
    for (Map.Entry<Long, Held> e : expected.entrySet()) {
      int s = meta.slot(e.getKey());
      assertThat(meta.get(s, RowMeta.USED)).isEqualTo(e.getValue().used());
      assertThat(meta.row(s)).isSameAs(e.getValue().row());
    }
    long[] old = meta.evictable(0);
    assertThat(old)
        .containsExactlyInAnyOrder(
            expected.entrySet().stream()
                .filter(e -> e.getValue().used() < 0)
                .mapToLong(Map.Entry::getKey)
                .toArray());
  }
}
