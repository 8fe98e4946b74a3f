package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RowCacheTest {
  private static final int WIDTH = 2;

  private static ParameterSpec table(String name) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(0)
        .addShape(WIDTH)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setOptimizer(
            OptimizerConfig.newBuilder()
                .setKind(OptimizerConfig.Kind.SGD)
                .setLearningRate(0.5f)
                .build())
        .build();
  }

  private static SparseRows rows(String table, long[] ids, float... data) {
    SparseRows.Builder b = SparseRows.newBuilder().setName(table).setDtype(DataType.FLOAT32);
    for (long id : ids) {
      b.addRowIds(id);
    }
    return b.setData(TensorCodec.encode(data)).build();
  }

  private static Parameters grads(long id, float... g) {
    Parameters p = new Parameters();
    p.putSparse("emb", new Parameters.SparseTable(WIDTH));
    p.sparse("emb").put(id, g);
    return p;
  }

  private static RowCache cache(int staleness, long maxBytes, Parameters values) {
    RowCache c = new RowCache(List.of(table("emb")), staleness, maxBytes);
    c.install(values);
    return c;
  }

  @Test
  void wanted_pullsMissingRowsOnce_andStaleOnesAgain() {
    Parameters values = new Parameters();
    RowCache c = cache(2, 1 << 20, values);
    c.begin(1);
    Map<String, long[]> first = c.wanted(new long[] {5, 7, 5, 7}, 1, false);
    assertThat(first.get("emb")).containsExactly(5, 7);
    // a batch planned ahead does not pull again what is being pulled
    assertThat(c.wanted(new long[] {5, 9}, 2, true).get("emb")).containsExactly(9);
    c.takePulled(List.of(rows("emb", new long[] {5, 7, 9}, 1, 1, 2, 2, 3, 3)), 1, 1);
    assertThat(values.sparse("emb").rowOrNull(7)).containsExactly(2f, 2f);
    // read during batch 1: fine for batches 1 to 3 with staleness 2, stale for batch 4
    assertThat(c.wanted(new long[] {5, 7}, 3, false)).isEmpty();
    assertThat(c.wanted(new long[] {5, 7}, 4, false).get("emb")).containsExactly(5, 7);
  }

  @Test
  void localStep_thenAnswer_rebasesOnThePserversValueKeepingLaterLocalSteps() {
    Parameters values = new Parameters();
    RowCache c = cache(4, 1 << 20, values);
    c.begin(1);
    c.wanted(new long[] {5}, 1, false);
    c.takePulled(List.of(rows("emb", new long[] {5}, 10, 10)), 1, 1);
    Parameters push1 = grads(5, 2, 2);
    c.pin(push1, 1);
    c.localStep(push1, 1);
    // SGD lr 0.5: 10 - 0.5 * 2
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(9f, 9f);
    Parameters base = new Parameters();
    base.putSparse("emb", new Parameters.SparseTable(WIDTH));
    c.copyRows(push1, base);
    // batch 2 steps the row again before push 1 is answered
    c.begin(2);
    Parameters push2 = grads(5, 4, 4);
    c.pin(push2, 1);
    c.localStep(push2, 2);
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(7f, 7f);
    // the pservers applied push 1 and another trainer's update: 10 - 1 - 3 = 6
    Parameters answer = new Parameters();
    answer.putSparse("emb", new Parameters.SparseTable(WIDTH));
    answer.sparse("emb").put(5, new float[] {6, 6});
    c.rebase(answer, base, push1, 2);
    // 6 plus batch 2's local step (-2)
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(4f, 4f);
  }

  @Test
  void takePulled_leavesARowAPushCarries() {
    Parameters values = new Parameters();
    RowCache c = cache(4, 1 << 20, values);
    c.begin(1);
    c.wanted(new long[] {5}, 1, false);
    c.takePulled(List.of(rows("emb", new long[] {5}, 10, 10)), 1, 1);
    c.pin(grads(5, 2, 2), 1);
    c.takePulled(List.of(rows("emb", new long[] {5}, 99, 99)), 1, 1);
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(10f, 10f);
  }

  @Test
  void evictIfFull_evictsLeastRecentlyUsed_neverPinnedOrPlanned() {
    Parameters values = new Parameters();
    long rowBytes = RowCache.ROW_OVERHEAD_BYTES + 4 * WIDTH;
    RowCache c = cache(100, 10 * rowBytes, values);
    for (int b = 1; b <= 12; b++) {
      c.begin(b);
      c.wanted(new long[] {b}, b, false);
      c.takePulled(List.of(rows("emb", new long[] {b}, b, b)), b, b);
    }
    c.pin(grads(1, 1, 1), 1);
    c.wanted(new long[] {2}, 13, true);
    c.evictIfFull(12);
    assertThat(c.bytes()).isLessThanOrEqualTo(9 * rowBytes);
    Parameters.SparseTable t = values.sparse("emb");
    assertThat(t.rowOrNull(1)).as("pinned").isNotNull();
    assertThat(t.rowOrNull(2)).as("planned for batch 13").isNotNull();
    assertThat(t.rowOrNull(12)).as("the batch under way").isNotNull();
    assertThat(t.rowOrNull(3)).as("least recently used").isNull();
    assertThat(c.evictions()).isEqualTo(3);
  }
}
