package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
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
