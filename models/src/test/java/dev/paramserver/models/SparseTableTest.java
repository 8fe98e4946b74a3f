package dev.paramserver.models;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SparseTableTest {
  @Test
  void randomPutsGetsAndRemoves_matchAHashMap() {
    Parameters.SparseTable t = new Parameters.SparseTable(2);
    Map<Long, float[]> ref = new HashMap<>();
    Random r = new Random(7);
    long[] special = {0, -1, 1, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + 1};
    for (int op = 0; op < 200_000; op++) {
      // a small id space, so that removals hit and probe runs wrap and shift
      long id = r.nextInt(10) == 0 ? special[r.nextInt(special.length)] : r.nextInt(5_000) * 31L;
      switch (r.nextInt(4)) {
        case 0, 1 -> {
          float[] row = {op, -op};
          t.put(id, row);
          ref.put(id, row);
        }
        case 2 -> assertThat(t.remove(id)).isSameAs(ref.remove(id));
        default -> assertThat(t.rowOrNull(id)).isSameAs(ref.get(id));
      }
      assertThat(t.size()).isEqualTo(ref.size());
    }
    for (Map.Entry<Long, float[]> e : ref.entrySet()) {
      assertThat(t.rowOrNull(e.getKey())).as("row %d", e.getKey()).isSameAs(e.getValue());
    }
    Map<Long, float[]> seen = new HashMap<>();
    t.forEach((id, row) -> assertThat(seen.put(id, row)).isNull());
    assertThat(seen).isEqualTo(ref);
    assertThat(t.sortedIds())
        .isEqualTo(ref.keySet().stream().mapToLong(Long::longValue).sorted().toArray());
  }

  @Test
  void row_createsZerosOnce_andClearEmpties() {
    Parameters.SparseTable t = new Parameters.SparseTable(3);
    float[] a = t.row(Long.MIN_VALUE);
    assertThat(a).containsExactly(0f, 0f, 0f);
    assertThat(t.row(Long.MIN_VALUE)).isSameAs(a);
    t.row(5);
    assertThat(t.size()).isEqualTo(2);
    t.clear();
    assertThat(t.isEmpty()).isTrue();
    assertThat(t.rowOrNull(Long.MIN_VALUE)).isNull();
    assertThat(t.rowOrNull(5)).isNull();
  }

  @Test
  void putCopyIfAbsent_copiesOnlyARowNotHeld_andRowAddsZerosThroughGrowth() {
    Parameters.SparseTable t = new Parameters.SparseTable(2);
    float[] src = {1f, 2f};
    for (long id : new long[] {Long.MIN_VALUE, 0, 7}) {
      assertThat(t.putCopyIfAbsent(id, src)).isTrue();
      float[] held = t.rowOrNull(id);
      assertThat(held).containsExactly(1f, 2f).isNotSameAs(src);
      assertThat(t.putCopyIfAbsent(id, new float[] {9f, 9f})).isFalse();
      assertThat(t.rowOrNull(id)).isSameAs(held);
    }
    Map<Long, float[]> ref = new HashMap<>();
    for (long id = 100; id < 1_100; id++) {
      float[] row = t.row(id * 977);
      assertThat(row).containsExactly(0f, 0f);
      row[0] = id;
      ref.put(id * 977, row);
    }
    assertThat(t.size()).isEqualTo(3 + ref.size());
    ref.forEach((id, row) -> assertThat(t.row(id)).isSameAs(row));
    assertThat(t.size()).isEqualTo(3 + ref.size());
  }

  @Test
  void put_ofAWrongWidth_isRefusedNamingTheRow() {
    Parameters.SparseTable t = new Parameters.SparseTable(3);
    assertThatThrownBy(() -> t.put(9, new float[2]))
        .hasMessage("row 9 has 2 values, the table's width is 3");
  }
}
