package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.pserver.sparse.EvictionPolicy;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.tensor.TensorCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A push that asks for its rows is answered with each row's values read in the probe that updated
 * it, and those are exactly the values a read after the push returns; applying a push stripe by
 * stripe (a table that neither evicts nor expires) leaves exactly the rows that applying it row by
 * row in order leaves (a capped table), with an optimizer with state, repeated ids and admission.
 */
class FusedPushAnswerTest {
  private static final long ID_SPACE = 400;

  private static ParameterShard shard(SparseSettings settings) {
    ParameterShard shard = new ParameterShard(true, settings);
    shard.init(
        init(
            "s",
            List.of(
                table(
                    "emb",
                    3,
                    OptimizerConfig.newBuilder()
                        .setKind(OptimizerConfig.Kind.ADAM)
                        .setLearningRate(0.01f)
                        .build()),
                table("wide", 1, sgd(0.5f))),
            List.of()));
    shard.finishInit(finish("s", 0));
    return shard;
  }

  private static ParameterSpec table(String name, int width, OptimizerConfig optimizer) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(0)
        .addShape(width)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setInitStddev(0.5f)
        .setOptimizer(optimizer)
        .build();
  }

  /** Admission at the second push of an id; uncapped (stripe by stripe) or capped (in order). */
  private static SparseSettings settings(boolean capped) {
    return new SparseSettings(
        capped ? 1_000_000 : Long.MAX_VALUE,
        Map.of(),
        null,
        EvictionPolicy.lfu(Duration.ofMinutes(10)),
        8,
        2,
        1 << 12);
  }

  /**
   * Push {@code step}: both tables, 60 ids each drawn from a small space (many repeats); every
   * third push's ids are distinct (its answer needs no repeats settled).
   */
  private static PushGradientsRequest push(long step, boolean returnRows) {
    SplittableRandom r = new SplittableRandom(step);
    PushGradientsRequest.Builder b =
        PushGradientsRequest.newBuilder()
            .setTrainerId("t0")
            .setSession("s1")
            .setStep(step)
            .setReturnRows(returnRows);
    for (String name : new String[] {"emb", "wide"}) {
      int width = name.equals("emb") ? 3 : 1;
      SparseRows.Builder rows = SparseRows.newBuilder().setName(name).setDtype(DataType.FLOAT32);
      float[] g = new float[60 * width];
      Set<Long> seen = new HashSet<>();
      for (int i = 0; i < 60; i++) {
        long id = r.nextLong(ID_SPACE);
        while (step % 3 == 0 && !seen.add(id)) {
          id = r.nextLong(ID_SPACE);
        }
        rows.addRowIds(id);
      }
      for (int i = 0; i < g.length; i++) {
        g[i] = (float) r.nextGaussian();
      }
      b.addSparseGradients(rows.setData(TensorCodec.encode(g)));
    }
    return b.build();
  }

  private static List<SparseRows> pullEverything(ParameterShard shard) {
    PullParametersRequest.Builder pull = PullParametersRequest.newBuilder();
    for (String name : new String[] {"emb", "wide"}) {
      SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(name);
      for (long id = 0; id < ID_SPACE; id++) {
        ref.addRowIds(id);
      }
      pull.addSparseRows(ref);
    }
    return shard.pull(pull.build()).getSparseRowsList();
  }

  @Test
  void answeredRows_areBitForBitWhatAReadAfterThePushReturns() {
    ParameterShard shard = shard(settings(false));
    int compared = 0;
    for (long step = 1; step <= 30; step++) {
      PushGradientsRequest request = push(step, true);
      PushOutcome outcome = shard.pushOutcome(request);
      assertThat(outcome.duplicate()).isFalse();
      assertThat(outcome.rows()).as("push %d answered with its rows", step).hasSize(2);
      List<SparseRows> readAfter =
          shard.valuesAfter(request, outcome.step(), true).getSparseRowsList();
      assertThat(outcome.rows()).as("push %d", step).isEqualTo(readAfter);
      compared += outcome.rows().get(0).getRowIdsCount();
    }
    assertThat(compared).isEqualTo(30 * 60);
  }

  /**
   * A push of trainer {@code trainer} with writer tag {@code tag} to rows {@code ids} of "wide".
   */
  private static PushGradientsRequest tagged(String trainer, long step, int tag, long... ids) {
    SparseRows.Builder rows = SparseRows.newBuilder().setName("wide").setDtype(DataType.FLOAT32);
    float[] g = new float[ids.length];
    for (int i = 0; i < ids.length; i++) {
      rows.addRowIds(ids[i]);
      g[i] = 0.25f * (i + 1);
    }
    return PushGradientsRequest.newBuilder()
        .setTrainerId(trainer)
        .setSession("s1")
        .setStep(step)
        .setReturnRows(true)
        .setWriterTag(tag)
        .addSparseGradients(rows.setData(TensorCodec.encode(g)))
        .build();
  }

  @Test
  void aWriterTag_cutsTheAnswerToTheRowsAnotherWriterChangedLast_withTheirValuesAfterThePush() {
    ParameterShard shard = shard(SparseSettings.unlimited());
    long[] ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    PushOutcome first = shard.pushOutcome(tagged("t0", 1, 7, ten));
    assertThat(first.changedOnly()).isTrue();
    assertThat(first.rows().get(0).getRowIdsList()).as("rows created").hasSize(10);
    PushOutcome again = shard.pushOutcome(tagged("t0", 2, 7, ten));
    assertThat(again.changedOnly()).isTrue();
    assertThat(again.rows().get(0).getRowIdsList()).as("only t0 changed them").isEmpty();
    assertThat(again.rows().get(0).getData().size()).isZero();
    PushOutcome other = shard.pushOutcome(tagged("t1", 1, 9, 7, 5, 6));
    assertThat(other.rows().get(0).getRowIdsList()).containsExactly(7L, 5L, 6L);
    PushGradientsRequest third = tagged("t0", 3, 7, ten);
    PushOutcome cut = shard.pushOutcome(third);
    assertThat(cut.rows().get(0).getRowIdsList()).containsExactly(5L, 6L, 7L);
    // the values of those three, after the push, as a read after it returns them
    SparseRows readAfter = shard.valuesAfter(third, cut.step(), true).getSparseRows(0);
    float[] all = TensorCodec.decode(readAfter.getData(), DataType.FLOAT32);
    float[] listed = TensorCodec.decode(cut.rows().get(0).getData(), DataType.FLOAT32);
    assertThat(listed).containsExactly(all[4], all[5], all[6]);
    // a push without a tag (another client) makes the next tagged one answer its rows again
    PushGradientsRequest untagged = tagged("t2", 1, 0, 2);
    assertThat(shard.pushOutcome(untagged).changedOnly()).isFalse();
    assertThat(shard.pushOutcome(tagged("t0", 4, 7, ten)).rows().get(0).getRowIdsList())
        .containsExactly(2L);
    PushOutcome duplicate = shard.pushOutcome(third);
    assertThat(duplicate.duplicate()).isTrue();
    assertThat(duplicate.changedOnly()).isFalse();
  }

  /** A pull of "wide" with writer tag {@code tag}, the first {@code held} of {@code ids} held. */
  private static PullParametersRequest pull(int tag, int held, long... ids) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName("wide").setHeld(held);
    for (long id : ids) {
      ref.addRowIds(id);
    }
    return PullParametersRequest.newBuilder().setWriterTag(tag).addSparseRows(ref).build();
  }

  @Test
  void aPullWithAWriterTag_leavesOutTheHeldRowsThatWriterChangedLast_withTheOthersBitForBit() {
    ParameterShard shard = shard(SparseSettings.unlimited());
    shard.pushOutcome(tagged("t0", 1, 7, 1, 2, 3, 4, 5, 6));
    shard.pushOutcome(tagged("t1", 1, 9, 5));
    // held: 1..6; not held: 7 (never written) and 3 (the client dropped its value)
    long[] ids = {1, 2, 4, 5, 6, 7, 3};
    PullParametersResponse cut = shard.pull(pull(7, 5, ids));
    assertThat(cut.getRowsChangedOnly()).isTrue();
    SparseRows rows = cut.getSparseRows(0);
    assertThat(rows.getRowIdsList())
        .as("5 another writer changed; 7 and 3 not held")
        .containsExactly(5L, 7L, 3L);
    SparseRows full = shard.pull(pull(0, 0, ids)).getSparseRows(0);
    float[] all = TensorCodec.decode(full.getData(), DataType.FLOAT32);
    assertThat(TensorCodec.decode(rows.getData(), DataType.FLOAT32))
        .containsExactly(all[3], all[5], all[6]);
    // another tag, no tag, or a repeated id: every row listed
    assertThat(shard.pull(pull(9, 5, ids)).getSparseRows(0).getRowIdsList())
        .containsExactly(1L, 2L, 4L, 6L, 7L, 3L);
    PullParametersResponse untagged = shard.pull(pull(0, 5, ids));
    assertThat(untagged.getRowsChangedOnly()).isFalse();
    assertThat(untagged.getSparseRows(0)).isEqualTo(full);
    assertThat(shard.pull(pull(7, 2, 1, 1, 2)).getSparseRows(0).getRowIdsList())
        .containsExactly(1L, 1L, 2L);
    // more held than asked for is refused, naming the table
    assertThatThrownBy(() -> shard.pull(pull(7, 8, ids)))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining("sparse table 'wide': held 8 is more than the 7 row ids");
  }

  @Test
  void aRepeatedPush_isADuplicateWithoutRows_andAPushNotAskingHasNone() {
    ParameterShard shard = shard(settings(false));
    PushGradientsRequest request = push(1, true);
    assertThat(shard.pushOutcome(request).rows()).hasSize(2);
    PushOutcome again = shard.pushOutcome(request);
    assertThat(again.duplicate()).isTrue();
    assertThat(again.rows()).isNull();
    assertThat(shard.pushOutcome(push(2, false)).rows()).isNull();
  }

  @Test
  void stripeByStripe_leavesExactlyTheRowsOfRowByRow() {
    ParameterShard byStripe = shard(settings(false));
    ParameterShard inOrder = shard(settings(true));
    List<List<SparseRows>> answers = new ArrayList<>();
    for (long step = 1; step <= 40; step++) {
      answers.add(byStripe.pushOutcome(push(step, true)).rows());
      PushGradientsRequest plain = push(step, false);
      inOrder.pushOutcome(plain);
      // the capped table's answer, read after the push, row by row
      List<SparseRows> expected =
          inOrder
              .valuesAfter(plain.toBuilder().setReturnRows(true).build(), 0, true)
              .getSparseRowsList();
      assertThat(answers.get(answers.size() - 1)).as("answer to push %d", step).isEqualTo(expected);
    }
    assertThat(pullEverything(byStripe)).isEqualTo(pullEverything(inOrder));
  }
}
