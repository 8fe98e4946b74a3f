package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;
import org.junit.jupiter.api.Test;

class SparseTableTest {
  private static final int WIDTH = 4;

  private static ParameterSpec table(String name, long rows, float stddev, OptimizerConfig opt) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(rows)
        .addShape(WIDTH)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setInitStddev(stddev)
        .setOptimizer(opt)
        .build();
  }

  private static ParameterShard shard(ParameterSpec... specs) {
    ParameterShard shard = new ParameterShard(true);
    shard.init(init("s", List.of(specs), List.of()));
    shard.finishInit(finish("s", 0));
    return shard;
  }

  private static float[] pullRows(ParameterShard shard, String table, long... ids) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(table);
    for (long id : ids) {
      ref.addRowIds(id);
    }
    SparseRows rows =
        shard.pull(PullParametersRequest.newBuilder().addSparseRows(ref).build()).getSparseRows(0);
    assertThat(rows.getRowIdsList()).hasSize(ids.length);
    return TensorCodec.decode(rows.getData());
  }

  private static PushGradientsRequest pushRows(String table, long[] ids, float... data) {
    SparseRows.Builder rows =
        SparseRows.newBuilder()
            .setName(table)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(data));
    for (long id : ids) {
      rows.addRowIds(id);
    }
    return PushGradientsRequest.newBuilder().setTrainerId("t").addSparseGradients(rows).build();
  }

  @Test
  void rows_areCreatedByPushesOnly_withADeterministicNormalInit() {
    ParameterShard a = shard(table("emb", 0, 0.5f, sgd(1)));
    ParameterShard b = shard(table("emb", 0, 0.5f, sgd(1)));
    assertThat(a.status().getParameterBytes()).isZero();
    float[] rowsA = pullRows(a, "emb", 7, 1_000_000_007L);
    // Another server (or a restart) creates the same rows, in any order.
    float[] rowsB = pullRows(b, "emb", 1_000_000_007L, 7);
    assertThat(java.util.Arrays.copyOfRange(rowsA, 0, WIDTH))
        .containsExactly(java.util.Arrays.copyOfRange(rowsB, WIDTH, 2 * WIDTH));
    assertThat(java.util.Arrays.copyOfRange(rowsA, 0, WIDTH))
        .isNotEqualTo(java.util.Arrays.copyOfRange(rowsA, WIDTH, 2 * WIDTH));
    assertThat(rowsA).doesNotContain(0f);
    // Pulls create no rows: memory grows with the rows pushed, two rows of 4 floats here.
    assertThat(a.status().getParameterBytes()).isZero();
    a.push(pushRows("emb", new long[] {7, 1_000_000_007L}, new float[2 * WIDTH]));
    assertThat(a.status().getParameterBytes()).isEqualTo(2 * WIDTH * 4);
    assertThat(pullRows(a, "emb", 7, 1_000_000_007L)).containsExactly(rowsA);
  }

  @Test
  void rowsWithZeroStddev_startAtZero() {
    assertThat(pullRows(shard(table("emb", 10, 0, sgd(1))), "emb", 3)).containsOnly(0f);
  }

  @Test
  void push_appliesThePerRowOptimizer_andCountsUpdatesPerRow() {
    OptimizerConfig adagrad =
        OptimizerConfig.newBuilder()
            .setKind(OptimizerConfig.Kind.ADAGRAD)
            .setLearningRate(1)
            .build();
    ParameterShard shard = shard(table("emb", 0, 0, adagrad));
    // Row 5 gets g = 3 twice, row 9 once. Adagrad with lr 1, from 0:
    // row 5: acc = 9, w = -3/3 = -1; acc = 18, w = -1 - 3/sqrt(18) = -1.7071068
    // row 9: acc = 9, w = -1 (its state is separate from row 5's)
    float[] g = new float[] {3, 3, 3, 3};
    shard.push(pushRows("emb", new long[] {5, 9}, concat(g, g)));
    shard.push(pushRows("emb", new long[] {5}, g));
    float[] rows = pullRows(shard, "emb", 5, 9);
    for (int i = 0; i < WIDTH; i++) {
      assertThat(rows[i]).isCloseTo(-1.7071068f, within(1e-6f));
      assertThat(rows[WIDTH + i]).isCloseTo(-1f, within(1e-6f));
    }
  }

  @Test
  void badSparsePushes_areRejected_andChangeNothing() {
    ParameterShard shard = shard(table("emb", 10, 0, sgd(1)));
    float[] before = pullRows(shard, "emb", 1, 2);
    assertReason(
        () -> shard.push(pushRows("emb", new long[] {1, 10}, new float[8])),
        ErrorReason.BAD_ARGUMENT,
        "row id 10");
    assertReason(
        () -> shard.push(pushRows("emb", new long[] {1, 2}, new float[7])),
        ErrorReason.SHAPE_MISMATCH,
        "expects 8 float32 values, got 7");
    assertReason(
        () -> shard.push(pushRows("users", new long[] {1}, new float[4])),
        ErrorReason.UNKNOWN_PARAMETER,
        "sparse table 'users'");
    float[] nan = new float[8];
    nan[6] = Float.NaN;
    assertReason(
        () -> shard.push(pushRows("emb", new long[] {1, 2}, nan)),
        ErrorReason.NON_FINITE_GRADIENT,
        "NaN");
    assertThat(pullRows(shard, "emb", 1, 2)).containsExactly(before);
    assertThat(shard.step()).isZero();
  }

  @Test
  void denseParameter_isNotASparseTable() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init(
            "s",
            List.of(Requests.dense("w", 4, 4, sgd(1))),
            List.of(Requests.block("w", 0, 4, 1, 2, 3, 4))));
    shard.finishInit(finish("s", 1));
    assertReason(
        () -> shard.push(pushRows("w", new long[] {0}, new float[4])),
        ErrorReason.UNKNOWN_PARAMETER,
        "is a dense parameter");
  }

  @Test
  void sparseRows_surviveACheckpoint() {
    ParameterShard shard = shard(table("emb", 0, 0.1f, sgd(0.5f)));
    shard.push(pushRows("emb", new long[] {4, 2}, 1, 2, 3, 4, 5, 6, 7, 8));
    ParameterShard restored = new ParameterShard(true);
    restored.restore(shard.snapshot());
    assertThat(pullRows(restored, "emb", 2, 4)).containsExactly(pullRows(shard, "emb", 2, 4));
    assertThat(restored.status().getParameterBytes()).isEqualTo(2 * WIDTH * 4);
  }

  private static float[] concat(float[] a, float[] b) {
    float[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static void assertReason(Runnable call, ErrorReason reason, String text) {
    assertThatThrownBy(call::run)
        .isInstanceOfSatisfying(
            ServiceException.class, e -> assertThat(e.reason()).isEqualTo(reason))
        .hasMessageContaining(text);
  }
}
