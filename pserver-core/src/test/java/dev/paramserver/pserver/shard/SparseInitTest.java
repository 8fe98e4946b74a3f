package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.pserver.sparse.TableSettings;
import dev.paramserver.tensor.TensorCodec;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Initial sparse rows in InitParameters (warm start from a saved model). */
class SparseInitTest {
  private static final int WIDTH = 3;
  private static final OptimizerConfig ADAGRAD =
      OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.ADAGRAD).setLearningRate(1).build();

  private static ParameterSpec table(String name, long rows) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(rows)
        .addShape(WIDTH)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setInitStddev(0.5f)
        .setOptimizer(ADAGRAD)
        .build();
  }

  private static SparseRows rows(String table, long[] ids, float... values) {
    SparseRows.Builder b =
        SparseRows.newBuilder()
            .setName(table)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(values));
    Arrays.stream(ids).forEach(b::addRowIds);
    return b.build();
  }

  private static InitParametersRequest initWithRows(String id, SparseRows... rows) {
    return init(id, List.of(table("emb", 0)), List.of()).toBuilder()
        .addAllSparseRows(List.of(rows))
        .build();
  }

  private static float[] pullRows(ParameterShard shard, long... ids) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName("emb");
    Arrays.stream(ids).forEach(ref::addRowIds);
    SparseRows rows =
        shard.pull(PullParametersRequest.newBuilder().addSparseRows(ref).build()).getSparseRows(0);
    return TensorCodec.decode(rows.getData());
  }

  private static ParameterShard cold() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(initWithRows("cold"));
    shard.finishInit(finish("cold", 0));
    return shard;
  }

  @Test
  void initialRows_areInstalledExactly_withFreshOptimizerState_andOtherRowsStayRandom() {
    ParameterShard shard = new ParameterShard(true);
    // Two calls, as the trainer splits rows across requests.
    shard.init(initWithRows("w", rows("emb", new long[] {3}, 0.25f, -1.5f, 7f)));
    shard.init(initWithRows("w", rows("emb", new long[] {1_000_000_007L}, 1e-7f, 0f, -3.0e5f)));
    shard.finishInit(finish("w", 0));

    assertThat(pullRows(shard, 3, 1_000_000_007L))
        .containsExactly(0.25f, -1.5f, 7f, 1e-7f, 0f, -3.0e5f);
    assertThat(shard.tables().get("emb").rowCount()).isEqualTo(2);
    // A row the file did not hold reads as the lazy random init, as on a cold shard.
    assertThat(pullRows(shard, 8)).containsExactly(pullRows(cold(), 8));
    assertThat(pullRows(shard, 8)).doesNotContain(0f);

    // Adagrad from fresh state (accumulator 0): g = 3 moves the row by exactly -1.
    shard.push(
        PushGradientsRequest.newBuilder()
            .setTrainerId("t")
            .addSparseGradients(rows("emb", new long[] {3}, 3, 3, 3))
            .build());
    float[] row = pullRows(shard, 3);
    assertThat(row[0]).isCloseTo(-0.75f, within(1e-6f));
    assertThat(row[1]).isCloseTo(-2.5f, within(1e-6f));
    assertThat(row[2]).isCloseTo(6f, within(1e-6f));
  }

  @Test
  void initialisedShard_keepsItsRows_whenTheInitIsSentAgain() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(initWithRows("w", rows("emb", new long[] {4}, 1, 2, 3)));
    shard.finishInit(finish("w", 0));
    shard.init(initWithRows("w", rows("emb", new long[] {4, 5}, 9, 9, 9, 9, 9, 9)));
    assertThat(pullRows(shard, 4)).containsExactly(1f, 2f, 3f);
    assertThat(shard.tables().get("emb").rowCount()).isEqualTo(1);

    // A restored checkpoint is initialised too: rows sent afterwards change nothing.
    ParameterShard restored = new ParameterShard(true);
    restored.restore(shard.snapshot());
    restored.init(initWithRows("w", rows("emb", new long[] {4}, 9, 9, 9)));
    assertThat(pullRows(restored, 4)).containsExactly(1f, 2f, 3f);
  }

  @Test
  void rowsAboveTheTablesCap_evictOthers_andEvictedRowsReadAsTheirRandomInit() {
    TableSettings t = TableSettings.unlimited();
    SparseSettings capped =
        new SparseSettings(2, Map.of(), null, t.policy(), t.sample(), 1, t.sketchWidth());
    ParameterShard shard = new ParameterShard(true, capped);
    float[] values = new float[5 * WIDTH];
    Arrays.fill(values, 42f);
    shard.init(initWithRows("w", rows("emb", new long[] {1, 2, 3, 4, 5}, values)));
    shard.finishInit(finish("w", 0));

    assertThat(shard.tables().get("emb").rowCount()).isEqualTo(2);
    float[] pulled = pullRows(shard, 1, 2, 3, 4, 5);
    float[] random = pullRows(cold(), 1, 2, 3, 4, 5);
    int kept = 0;
    for (int i = 0; i < 5; i++) {
      float[] got = Arrays.copyOfRange(pulled, i * WIDTH, (i + 1) * WIDTH);
      if (got[0] == 42f) {
        kept++;
      } else {
        assertThat(got).containsExactly(Arrays.copyOfRange(random, i * WIDTH, (i + 1) * WIDTH));
      }
    }
    assertThat(kept).isEqualTo(2);
  }

  @Test
  void badInitialRows_areRejected_andChangeNothing() {
    ParameterShard shard = new ParameterShard(true);
    InitParametersRequest dense =
        init("w", List.of(Requests.dense("w", 2, 2, sgd(1))), List.of()).toBuilder()
            .addSparseRows(rows("w", new long[] {0}, 1, 2, 3))
            .build();
    assertReason(() -> shard.init(dense), ErrorReason.BAD_ARGUMENT, "is a dense parameter");
    assertReason(
        () -> shard.init(initWithRows("w", rows("other", new long[] {0}, 1, 2, 3))),
        ErrorReason.UNKNOWN_PARAMETER,
        "sparse table 'other'");
    assertReason(
        () -> shard.init(initWithRows("w", rows("emb", new long[] {0, 1}, 1, 2, 3))),
        ErrorReason.SHAPE_MISMATCH,
        "2 rows of width 3 expect 6 float32 values, got 3");
    assertReason(
        () ->
            shard.init(
                initWithRows(
                    "w",
                    rows("emb", new long[] {0}, 1, 2, 3).toBuilder()
                        .setDtype(DataType.BFLOAT16)
                        .setData(ByteString.copyFrom(new byte[6]))
                        .build())),
        ErrorReason.UNSUPPORTED_DTYPE,
        "must be FLOAT32");
    InitParametersRequest outOfRange =
        init("w", List.of(table("emb", 10)), List.of()).toBuilder()
            .addSparseRows(rows("emb", new long[] {10}, 1, 2, 3))
            .build();
    assertReason(() -> shard.init(outOfRange), ErrorReason.BAD_ARGUMENT, "row id 10");
    assertThat(shard.parameters()).isEmpty();
    assertThat(shard.tables()).isEmpty();
  }

  private static void assertReason(Runnable call, ErrorReason reason, String text) {
    assertThatThrownBy(call::run)
        .isInstanceOfSatisfying(
            ServiceException.class, e -> assertThat(e.reason()).isEqualTo(reason))
        .hasMessageContaining(text);
  }
}
