package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.BatchRows;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.trainer.pserver.RowWants;
import java.util.List;
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

  private static RowCache cache(int staleness, long maxBytes, Parameters values) {
    RowCache c = new RowCache(List.of(table("emb")), staleness, maxBytes);
    c.install(values);
    return c;
  }

  /** The cached row {@code id} as the model would read it (resolved alone). */
  private static float[] row(RowCache c, long id) {
    BatchRows r = c.newBatchRows();
    c.resolve(new long[] {id}, r);
    return r.table(0).values()[0];
  }

  /**
   * Resolves batch {@code ids}, gives row {@code k} the gradient {@code grads[k]} (others zero),
   * accumulates it and takes the local step; returns the push's rows.
   */
  private static PushRows step(RowCache c, long[] ids, float[]... grads) {
    BatchRows r = c.newBatchRows();
    c.resolve(ids, r);
    for (int k = 0; k < grads.length; k++) {
      System.arraycopy(grads[k], 0, r.table(0).grads(), k * WIDTH, WIDTH);
    }
    c.accumulate(r);
    c.localStep(true);
    return c.takeAccumulated(c.newPushRows());
  }

  @Test
  void wanted_pullsMissingRowsOnce_andStaleOnesAgain() {
    Parameters values = new Parameters();
    RowCache c = cache(2, 1 << 20, values);
    c.begin(1);
    RowWants first = c.wanted(new long[] {5, 7, 5, 7}, 1, false, false);
    assertThat(first.get("emb")).containsExactly(5, 7);
    // a batch planned ahead does not pull again what is being pulled
    assertThat(c.wanted(new long[] {5, 9}, 2, true, false).get("emb")).containsExactly(9);
    c.takePulled(List.of(rows("emb", new long[] {5, 7}, 1, 1, 2, 2)), 1, 1);
    c.takePulled(List.of(rows("emb", new long[] {9}, 3, 3)), 1, 1);
    assertThat(row(c, 7)).containsExactly(2f, 2f);
    assertThat(row(c, 9)).containsExactly(3f, 3f);
    // read during batch 1: fine for batches 1 to 3 with staleness 2, stale for batch 4
    c.begin(3);
    assertThat(c.wanted(new long[] {5, 9}, 3, false, false).ids()).isEmpty();
    c.begin(4);
    assertThat(c.wanted(new long[] {5, 7}, 4, false, false).get("emb")).containsExactly(5, 7);
  }

  @Test
  void localStep_thenAnswer_rebasesOnThePserversValueKeepingLaterLocalSteps() {
    RowCache c = cache(4, 1 << 20, new Parameters());
    c.begin(1);
    c.wanted(new long[] {5}, 1, false, false);
    c.takePulled(List.of(rows("emb", new long[] {5}, 10, 10)), 1, 1);
    PushRows push1 = step(c, new long[] {5}, new float[] {2, 2});
    // SGD lr 0.5: 10 - 0.5 * 2; the push's base is the row after its step
    assertThat(row(c, 5)).containsExactly(9f, 9f);
    assertThat(push1.base(0)).startsWith(9f, 9f);
    // batch 2 steps the row again before push 1 is answered
    c.begin(2);
    c.wanted(new long[] {5}, 2, false, false);
    PushRows push2 = step(c, new long[] {5}, new float[] {4, 4});
    assertThat(row(c, 5)).containsExactly(7f, 7f);
    // the pservers applied push 1 and another trainer's update: 10 - 1 - 3 = 6
    c.rebase(List.of(rows("emb", new long[] {5}, 6, 6)), push1);
    // 6 plus batch 2's local step (-2)
    assertThat(row(c, 5)).containsExactly(4f, 4f);
    push1.release();
    push2.release();
  }

  @Test
  void confirmedPush_keepsItsRowsLocalValues_andCountsThemReadNow_soTheyAreNotPulledAgain() {
    RowCache c = cache(1, 1 << 20, new Parameters());
    assertThat(c.additive()).as("plain SGD at a constant rate").isTrue();
    c.begin(1);
    c.wanted(new long[] {5, 6}, 1, false, false);
    c.takePulled(List.of(rows("emb", new long[] {5, 6}, 10, 10, 20, 20)), 1, 1);
    PushRows push = step(c, new long[] {5, 6}, new float[] {2, 2}, new float[] {2, 2});
    c.begin(5);
    // the answer lists row 6 only (another trainer changed it: 19 - 3 = 16), 5 is confirmed
    c.rebase(List.of(rows("emb", new long[] {6}, 16, 16)), push);
    c.confirm(push);
    assertThat(row(c, 5)).containsExactly(9f, 9f);
    assertThat(row(c, 6)).containsExactly(16f, 16f);
    // read during batch 5: fresh enough for batch 6 at staleness 1
    assertThat(c.wanted(new long[] {5, 6}, 6, false, false).ids()).isEmpty();
    // a push released without confirmation leaves its rows as old as they were
    PushRows unconfirmed = step(c, new long[] {5}, new float[] {2, 2});
    c.begin(9);
    unconfirmed.release();
    assertThat(c.wanted(new long[] {5, 6}, 9, false, false).get("emb")).containsExactly(5, 6);
  }

  @Test
  void withAWriterTag_heldRowsComeFirst_andThoseAPullLeftOutCountAsRead_underThatTagOnly() {
    RowCache c = cache(1, 1 << 20, new Parameters());
    c.begin(1);
    c.wanted(new long[] {5, 6, 7}, 1, false, false);
    c.takePulled(List.of(rows("emb", new long[] {5, 6, 7}, 1, 1, 2, 2, 3, 3)), 1, 1);
    c.writerTag(41);
    c.begin(4);
    RowWants w = c.wanted(new long[] {8, 5, 9, 6, 7}, 4, false, false);
    assertThat(w.writerTag()).isEqualTo(41);
    assertThat(w.held("emb")).isEqualTo(3);
    assertThat(w.get("emb")).startsWith(5, 6, 7).containsExactlyInAnyOrder(5, 6, 7, 8, 9);
    // the answer lists 6 (another writer changed it) and the rows not held; 5 and 7 left out
    c.takePulled(List.of(rows("emb", new long[] {6, 8, 9}, 20, 20, 8, 8, 9, 9)), 4, 4);
    PushRows carrying7 = step(c, new long[] {7}, new float[] {2, 2});
    c.takeLeftOut(w, 41, 4, 4);
    assertThat(row(c, 5)).containsExactly(1f, 1f);
    assertThat(row(c, 6)).containsExactly(20f, 20f);
    c.begin(5);
    assertThat(c.wanted(new long[] {5, 6, 8, 9}, 5, false, false).ids())
        .as("read in batch 4")
        .isEmpty();
    assertThat(c.wanted(new long[] {7}, 5, false, false).ids())
        .as("carried by an unanswered push: its answer refreshes it")
        .isEmpty();
    carrying7.release();
    assertThat(c.wanted(new long[] {7}, 5, false, false).get("emb"))
        .as("read in batch 1")
        .containsExactly(7);
    // a pull under a tag no longer in use confirms nothing; without a tag nothing is held
    c.begin(9);
    c.writerTag(42);
    RowWants old = new RowWants(41);
    old.put("emb", new long[] {5, 6}, 2);
    c.takeLeftOut(old, 41, 9, 9);
    c.writerTag(0);
    RowWants untagged = c.wanted(new long[] {5, 6, 10}, 9, false, false);
    assertThat(untagged.get("emb")).containsExactly(5, 6, 10);
    assertThat(untagged.held("emb")).isZero();
  }

  @Test
  void heldRowsLeftOut_areFoundAtTheSlotsWantedRecorded_orByIdOnceTheSlotsMoved() {
    RowCache c = cache(1, 1 << 30, new Parameters());
    c.begin(1);
    c.wanted(new long[] {5, 6}, 1, false, false);
    c.takePulled(List.of(rows("emb", new long[] {5, 6}, 1, 1, 2, 2)), 1, 1);
    c.writerTag(7);
    c.begin(4);
    RowWants kept = c.wanted(new long[] {5}, 4, false, false);
    assertThat(kept.heldSlots("emb")).as("recorded where wanted found the held rows").isNotNull();
    c.takeLeftOut(kept, 7, 4, 4);
    c.begin(5);
    RowWants moved = c.wanted(new long[] {5, 6}, 5, false, false);
    assertThat(moved.get("emb")).as("5 read in batch 4, found by its slot").containsExactly(6);
    // thousands of new rows grow the table: every slot moves before the pull is taken
    long[] many = LongStream.range(1_000, 9_000).toArray();
    c.wanted(many, 5, false, false);
    c.takePulled(List.of(rows("emb", many, new float[2 * many.length])), 5, 5);
    c.takeLeftOut(moved, 7, 5, 5);
    c.begin(6);
    assertThat(c.wanted(new long[] {6}, 6, false, false).ids())
        .as("6 found again by its id: read in batch 5")
        .isEmpty();
    assertThat(c.wanted(new long[] {5}, 6, false, false).get("emb"))
        .as("read in batch 4: too old for batch 6")
        .containsExactly(5);
  }

  @Test
  void twoBatchesPlannedIntoOnePull_askForEachRowOnce_andForWhatOnlyTheSecondNeeds() {
    RowCache c = cache(2, 1 << 20, new Parameters());
    c.writerTag(5);
    c.begin(1);
    c.wanted(new long[] {1, 2, 3}, 1, false, false);
    c.takePulled(List.of(rows("emb", new long[] {1, 2, 3}, 1, 1, 2, 2, 3, 3)), 1, 1);
    c.begin(2);
    c.wanted(new long[] {3}, 2, false, false);
    c.takePulled(List.of(rows("emb", new long[] {3}, 3, 3)), 2, 2);
    // planned during batch 2, batches 4 and 5 share one pull: with staleness 2, batch 4 needs rows
    // read in batch 2 or later (1 and 2 are stale, 3 is not), batch 5 in batch 3 or later
    c.begin(2);
    RowWants four = c.wanted(new long[] {1, 2, 3, 7}, 4, true, false);
    RowWants five = c.wanted(new long[] {1, 3, 7, 8}, 5, true, true);
    assertThat(four.get("emb")).containsExactly(1, 2, 7);
    assertThat(four.held("emb")).isEqualTo(2);
    assertThat(five.get("emb"))
        .as("1 and 7 asked by batch 4; 3 stale for 5 only")
        .containsExactly(3, 8);
    RowWants both = four.plus(five);
    assertThat(both.get("emb")).containsExactly(1, 2, 3, 7, 8);
    assertThat(both.held("emb")).isEqualTo(3);
    assertThat(both.rows()).isEqualTo(5);
    // the held rows' slots, both batches' in the order of the held ids
    int[] slots = both.heldSlots("emb").slots();
    assertThat(new int[] {slots[0], slots[1], slots[2]})
        .containsExactly(
            four.heldSlots("emb").slots()[0],
            four.heldSlots("emb").slots()[1],
            five.heldSlots("emb").slots()[0]);
    assertThat(slots[0]).isNotEqualTo(slots[1]).isNotEqualTo(slots[2]);
    // not paired, batch 5 asks again for what batch 4 asked (each pull is whole on its own)
    c.begin(3);
    assertThat(c.wanted(new long[] {1, 2}, 6, true, false).get("emb")).containsExactly(1, 2);
  }

  @Test
  void withStateOrADecayingRate_theCacheIsNotAdditive() {
    ParameterSpec adagrad =
        table("emb").toBuilder()
            .setOptimizer(
                OptimizerConfig.newBuilder()
                    .setKind(OptimizerConfig.Kind.ADAGRAD)
                    .setLearningRate(0.5f))
            .build();
    assertThat(new RowCache(List.of(adagrad), 1, 1 << 20).additive()).isFalse();
    ParameterSpec decaying =
        table("emb").toBuilder()
            .setOptimizer(
                table("emb").getOptimizer().toBuilder()
                    .setSchedule(
                        dev.paramserver.proto.v1.LearningRateSchedule.newBuilder()
                            .setKind(dev.paramserver.proto.v1.LearningRateSchedule.Kind.EXPONENTIAL)
                            .setGamma(0.9f)))
            .build();
    assertThat(new RowCache(List.of(decaying), 1, 1 << 20).additive()).isFalse();
    ParameterSpec clipped =
        table("emb").toBuilder()
            .setOptimizer(table("emb").getOptimizer().toBuilder().setClipNorm(1f))
            .build();
    assertThat(new RowCache(List.of(clipped), 1, 1 << 20).additive()).isFalse();
  }

  @Test
  void takePulled_leavesARowAnUnansweredPushCarries_untilItIsAnswered() {
    RowCache c = cache(4, 1 << 20, new Parameters());
    c.begin(1);
    c.wanted(new long[] {5}, 1, false, false);
    c.takePulled(List.of(rows("emb", new long[] {5}, 10, 10)), 1, 1);
    PushRows push = step(c, new long[] {5}, new float[] {0, 0});
    c.begin(2);
    c.takePulled(List.of(rows("emb", new long[] {5}, 99, 99)), 2, 2);
    assertThat(row(c, 5)).containsExactly(10f, 10f);
    push.release();
    c.begin(3);
    c.takePulled(List.of(rows("emb", new long[] {5}, 99, 99)), 3, 3);
    assertThat(row(c, 5)).as("nothing carries it any more").containsExactly(99f, 99f);
  }

  @Test
  void evictIfFull_evictsLeastRecentlyUsed_neverCarriedOrPlanned() {
    long rowBytes = RowCache.ROW_OVERHEAD_BYTES + 4 * WIDTH;
    RowCache c = cache(100, 10 * rowBytes, new Parameters());
    for (int b = 1; b <= 12; b++) {
      c.begin(b);
      c.wanted(new long[] {b}, b, false, false);
      c.takePulled(List.of(rows("emb", new long[] {b}, b, b)), b, b);
    }
    PushRows carried = step(c, new long[] {1}, new float[] {0, 0});
    c.wanted(new long[] {2}, 13, true, false);
    c.evictIfFull(12);
    assertThat(c.bytes()).isLessThanOrEqualTo(9 * rowBytes);
    c.begin(13);
    assertThat(c.wanted(new long[] {1, 2, 12}, 13, false, false).ids())
        .as("kept: carried, planned, in use")
        .isEmpty();
    assertThat(c.wanted(new long[] {3}, 13, false, false).get("emb"))
        .as("least recently used")
        .containsExactly(3);
    assertThat(c.evictions()).isEqualTo(3);
    carried.release();
  }

  @Test
  void resolve_afterPlanningAhead_findsTheRowsAgainWhenTheTableGrewMeanwhile() {
    RowCache c = cache(4, 1 << 20, new Parameters());
    // batch 2's ids (one array, as a Batch keeps them) planned ahead during batch 1
    long[] batch2 = {21, 22, 21, 23};
    c.begin(1);
    assertThat(c.wanted(batch2, 2, true, false).get("emb")).containsExactly(21, 22, 23);
    c.takePulled(List.of(rows("emb", new long[] {21, 22, 23}, 5, 5, 6, 6, 7, 7)), 1, 1);
    // batch 3 planned too: 100 new rows grow the table, which moves every slot found before
    long[] batch3 = LongStream.range(100, 200).toArray();
    assertThat(c.wanted(batch3, 3, true, false).get("emb")).hasSize(100);
    c.begin(2);
    assertThat(c.wanted(batch2, 2, false, false).ids())
        .as("nothing to pull: read in batch 1")
        .isEmpty();
    BatchRows r = c.newBatchRows();
    c.resolve(batch2, r);
    assertThat(r.count()).isEqualTo(3);
    assertThat(r.local()).containsExactly(0, 1, 0, 2);
    assertThat(r.table(0).values()[0]).containsExactly(5f, 5f);
    assertThat(r.table(0).values()[1]).containsExactly(6f, 6f);
    assertThat(r.table(0).values()[2]).containsExactly(7f, 7f);
  }

  @Test
  void localStepWithCopies_keepsTheRowsBeforeOnce_andMergedPushesSumTheirGradients() {
    RowCache c = cache(4, 1 << 20, new Parameters());
    c.begin(1);
    c.wanted(new long[] {5, 6}, 1, false, false);
    c.takePulled(List.of(rows("emb", new long[] {5, 6}, 10, 10, 20, 20)), 1, 1);
    PushRows held = step(c, new long[] {5}, new float[] {2, 2});
    // a second gradient held with the first: row 5 keeps its first copy, row 6 gets one
    PushRows next = step(c, new long[] {6, 5}, new float[] {4, 4}, new float[] {2, 2});
    assertThat(row(c, 5)).containsExactly(8f, 8f);
    assertThat(row(c, 6)).containsExactly(18f, 18f);
    held.merge(next);
    Parameters before = held.putBefore(new Parameters());
    assertThat(before.sparse("emb").rowOrNull(5)).containsExactly(10f, 10f);
    assertThat(before.sparse("emb").rowOrNull(6)).containsExactly(20f, 20f);
    assertThat(next.isEmpty()).isTrue();
    assertThat(held.count()).isEqualTo(2);
    assertThat(held.flat().get("emb").ids()).startsWith(5, 6);
    assertThat(held.grads(0)).startsWith(4f, 4f, 4f, 4f);
    assertThat(held.find(6, 0)).isEqualTo(1);
    assertThat(held.find(7, 0)).isEqualTo(-1);
    // one count per push: released once, row 5 takes pulls again
    held.release();
    c.begin(2);
    c.takePulled(List.of(rows("emb", new long[] {5, 6}, 1, 1, 2, 2)), 2, 2);
    assertThat(row(c, 5)).containsExactly(1f, 1f);
    assertThat(row(c, 6)).containsExactly(2f, 2f);
  }
}
