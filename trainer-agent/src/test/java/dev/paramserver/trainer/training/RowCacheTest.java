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
import java.util.stream.LongStream;
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
    c.takePulled(List.of(rows("emb", new long[] {5, 7}, 1, 1, 2, 2)), 1, 1, true);
    c.takePulled(List.of(rows("emb", new long[] {9}, 3, 3)), 1, 1, false);
    assertThat(values.sparse("emb").rowOrNull(7)).containsExactly(2f, 2f);
    assertThat(values.sparse("emb").rowOrNull(9)).as("not in batch 1's view").isNull();
    // read during batch 1: fine for batches 1 to 3 with staleness 2, stale for batch 4
    c.begin(3);
    assertThat(c.wanted(new long[] {5, 9}, 3, false)).isEmpty();
    assertThat(values.sparse("emb").rowOrNull(9)).containsExactly(3f, 3f);
    c.begin(4);
    assertThat(c.wanted(new long[] {5, 7}, 4, false).get("emb")).containsExactly(5, 7);
  }

  @Test
  void localStep_thenAnswer_rebasesOnThePserversValueKeepingLaterLocalSteps() {
    Parameters values = new Parameters();
    RowCache c = cache(4, 1 << 20, values);
    c.begin(1);
    c.wanted(new long[] {5}, 1, false);
    c.takePulled(List.of(rows("emb", new long[] {5}, 10, 10)), 1, 1, true);
    Parameters push1 = grads(5, 2, 2);
    c.localStep(push1);
    // SGD lr 0.5: 10 - 0.5 * 2
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(9f, 9f);
    Parameters base = new Parameters();
    base.putSparse("emb", new Parameters.SparseTable(WIDTH));
    c.copyRows(push1, base);
    // batch 2 steps the row again before push 1 is answered
    c.begin(2);
    c.wanted(new long[] {5}, 2, false);
    c.localStep(grads(5, 4, 4));
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(7f, 7f);
    // the pservers applied push 1 and another trainer's update: 10 - 1 - 3 = 6
    c.rebase(List.of(rows("emb", new long[] {5}, 6, 6)), base);
    // 6 plus batch 2's local step (-2)
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(4f, 4f);
  }

  @Test
  void takePulled_leavesARowAnUnansweredPushCarries() {
    Parameters values = new Parameters();
    RowCache c = cache(4, 1 << 20, values);
    c.begin(1);
    c.wanted(new long[] {5}, 1, false);
    c.takePulled(List.of(rows("emb", new long[] {5}, 10, 10)), 1, 1, true);
    c.unanswered((t, id) -> id == 5);
    c.begin(2);
    c.takePulled(List.of(rows("emb", new long[] {5}, 99, 99)), 2, 2, true);
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(10f, 10f);
  }

  @Test
  void evictIfFull_evictsLeastRecentlyUsed_neverCarriedOrPlanned() {
    Parameters values = new Parameters();
    long rowBytes = RowCache.ROW_OVERHEAD_BYTES + 4 * WIDTH;
    RowCache c = cache(100, 10 * rowBytes, values);
    for (int b = 1; b <= 12; b++) {
      c.begin(b);
      c.wanted(new long[] {b}, b, false);
      c.takePulled(List.of(rows("emb", new long[] {b}, b, b)), b, b, true);
    }
    c.unanswered((t, id) -> id == 1);
    c.wanted(new long[] {2}, 13, true);
    c.evictIfFull(12);
    assertThat(c.bytes()).isLessThanOrEqualTo(9 * rowBytes);
    assertThat(values.sparse("emb").rowOrNull(12)).as("the batch under way").isNotNull();
    c.begin(13);
    assertThat(c.wanted(new long[] {1, 2, 12}, 13, false))
        .as("kept: carried, planned, in use")
        .isEmpty();
    assertThat(c.wanted(new long[] {3}, 13, false).get("emb"))
        .as("least recently used")
        .containsExactly(3);
    assertThat(c.evictions()).isEqualTo(3);
  }

  @Test
  void wanted_afterPlanningAhead_findsTheRowsAgainWhenTheTableGrewMeanwhile() {
    Parameters values = new Parameters();
    RowCache c = cache(4, 1 << 20, values);
    // batch 2's ids (one array, as a Batch keeps them) planned ahead during batch 1
    long[] batch2 = {21, 22, 21, 23};
    c.begin(1);
    assertThat(c.wanted(batch2, 2, true).get("emb")).containsExactly(21, 22, 23);
    c.takePulled(List.of(rows("emb", new long[] {21, 22, 23}, 5, 5, 6, 6, 7, 7)), 1, 1, false);
    // batch 3 planned too: 100 new rows grow the table, which moves every slot found before
    long[] batch3 = LongStream.range(100, 200).toArray();
    assertThat(c.wanted(batch3, 3, true).get("emb")).hasSize(100);
    c.begin(2);
    assertThat(c.wanted(batch2, 2, false)).as("nothing to pull: read in batch 1").isEmpty();
    assertThat(values.sparse("emb").rowOrNull(21)).containsExactly(5f, 5f);
    assertThat(values.sparse("emb").rowOrNull(22)).containsExactly(6f, 6f);
    assertThat(values.sparse("emb").rowOrNull(23)).containsExactly(7f, 7f);
    assertThat(values.sparse("emb").size()).isEqualTo(3);
  }

  @Test
  void localStepWithCopies_keepsTheRowsBeforeOnce_andTheRowsAfterEachStep() {
    Parameters values = new Parameters();
    RowCache c = cache(4, 1 << 20, values);
    c.begin(1);
    c.wanted(new long[] {5, 6}, 1, false);
    c.takePulled(List.of(rows("emb", new long[] {5, 6}, 10, 10, 20, 20)), 1, 1, true);
    Parameters before = new Parameters();
    before.putSparse("emb", new Parameters.SparseTable(WIDTH));
    Parameters after = new Parameters();
    after.putSparse("emb", new Parameters.SparseTable(WIDTH));
    after.sparse("emb").put(99, new float[] {9, 9});
    c.localStep(grads(5, 2, 2), before, after);
    assertThat(before.sparse("emb").rowOrNull(5)).containsExactly(10f, 10f);
    assertThat(after.sparse("emb").rowOrNull(5)).containsExactly(9f, 9f);
    assertThat(after.sparse("emb").rowOrNull(99)).as("emptied first").isNull();
    // a second gradient held with the first: row 5 keeps its first copy, row 6 gets one
    Parameters g = grads(5, 2, 2);
    g.sparse("emb").put(6, new float[] {4, 4});
    c.localStep(g, before, null);
    assertThat(before.sparse("emb").rowOrNull(5)).containsExactly(10f, 10f);
    assertThat(before.sparse("emb").rowOrNull(6)).containsExactly(20f, 20f);
    assertThat(values.sparse("emb").rowOrNull(5)).containsExactly(8f, 8f);
    assertThat(values.sparse("emb").rowOrNull(6)).containsExactly(18f, 18f);
    // the copies are copies: a later step leaves them
    assertThat(after.sparse("emb").rowOrNull(5)).containsExactly(9f, 9f);
  }
}
