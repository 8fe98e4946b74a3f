package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pull;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Asynchronous pushes decode their dense and sparse gradients into one thread's reused arrays
 * ({@link GradientScratch}): a push smaller than the one before applies only its own gradient (not
 * the earlier push's tail), and a non-finite value an earlier, refused push left beyond a later
 * push's gradient does not refuse the later one.
 */
class GradientScratchTest {
  private static final int WIDTH = 2;

  @Test
  void smallerPushAfterALargerOne_appliesOnlyItsOwnRows() {
    ParameterShard shard = shard();
    shard.push(push(1, new long[] {0, 1, 2, 3}, 1f, 1f, 2f, 2f, 3f, 3f, 4f, 4f));
    shard.push(push(2, new long[] {1}, 10f, 20f));

    assertThat(rows(shard, 0, 1, 2, 3)).containsExactly(-1f, -1f, -12f, -22f, -3f, -3f, -4f, -4f);
  }

  @Test
  void nonFiniteTailOfARefusedPush_doesNotRefuseTheNextSmallerPush() {
    ParameterShard shard = shard();
    assertThatThrownBy(() -> shard.push(push(1, new long[] {0, 1}, 1f, 1f, Float.NaN, Float.NaN)))
        .isInstanceOf(ServiceException.class);
    shard.push(push(2, new long[] {0}, 1f, 2f));

    assertThat(rows(shard, 0, 1)).containsExactly(-1f, -2f, 0f, 0f);
  }

  @Test
  void scratch_growsForALargerPush_andHandsOutLargeOnesUnkept() {
    GradientScratch scratch = GradientScratch.ofThread();
    float[] small = scratch.floats(0, 10);
    assertThat(scratch.floats(0, 5)).isSameAs(small);
    assertThat(scratch.floats(0, 11).length).isGreaterThanOrEqualTo(11);
    assertThat(scratch.floats(7, 3).length).isGreaterThanOrEqualTo(3);
    float[] big = scratch.floats(1, GradientScratch.MAX_FLOATS + 1);
    assertThat(scratch.floats(1, GradientScratch.MAX_FLOATS + 1)).isNotSameAs(big);
  }

  @Test
  void denseBlockAfterALargerOne_appliesOnlyItsOwnElements() {
    ParameterShard shard = denseShard();
    shard.push(Requests.push(gradient("p", 0, 1f, 1f, 1f, 1f), gradient("p", 1, 2f, 3f)));
    // block 1 alone: decoded into the slot block 0's four elements were decoded into before
    shard.push(Requests.push(gradient("p", 1, 5f, 6f)));

    assertThat(denseBlock(shard, 0)).containsExactly(-1f, -1f, -1f, -1f);
    assertThat(denseBlock(shard, 1)).containsExactly(-7f, -9f);
  }

  @Test
  void nonFiniteTailOfARefusedDensePush_doesNotRefuseTheNextSmallerBlock() {
    ParameterShard shard = denseShard();
    assertThatThrownBy(
            () -> shard.push(Requests.push(gradient("p", 0, 1f, 1f, Float.NaN, Float.NaN))))
        .isInstanceOf(ServiceException.class);
    shard.push(Requests.push(gradient("p", 1, 1f, 2f)));

    assertThat(denseBlock(shard, 0)).containsExactly(0f, 0f, 0f, 0f);
    assertThat(denseBlock(shard, 1)).containsExactly(-1f, -2f);
  }

  @Test
  void scratch_keepsAtMostItsBudget_andHandsOutTheRestUnkept() {
    GradientScratch scratch = new GradientScratch();
    int slots = GradientScratch.MAX_KEPT_FLOATS / GradientScratch.MAX_FLOATS;
    for (int k = 0; k < slots; k++) {
      float[] a = scratch.floats(k, GradientScratch.MAX_FLOATS);
      assertThat(scratch.floats(k, GradientScratch.MAX_FLOATS)).isSameAs(a);
    }
    float[] over = scratch.floats(slots, 1);
    assertThat(scratch.floats(slots, 1)).isNotSameAs(over);
  }

  private static ParameterShard denseShard() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init(
            "s",
            List.of(dense("p", 6, 4, sgd(1f))),
            List.of(block("p", 0, 4, 0f, 0f, 0f, 0f), block("p", 1, 4, 0f, 0f))));
    shard.finishInit(finish("s", 2));
    return shard;
  }

  private static float[] denseBlock(ParameterShard shard, int block) {
    return TensorCodec.decode(shard.pull(pull("p", block)).getBlocks(0).getData());
  }

  private static ParameterShard shard() {
    ParameterShard shard = new ParameterShard(true);
    ParameterSpec table =
        ParameterSpec.newBuilder()
            .setName("emb")
            .addShape(0)
            .addShape(WIDTH)
            .setDtype(DataType.FLOAT32)
            .setSparse(true)
            .setOptimizer(sgd(1f))
            .build();
    shard.init(init("s", List.of(table), List.of()));
    shard.finishInit(finish("s", 0));
    return shard;
  }

  private static PushGradientsRequest push(long step, long[] ids, float... gradient) {
    SparseRows.Builder rows =
        SparseRows.newBuilder()
            .setName("emb")
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(gradient));
    for (long id : ids) {
      rows.addRowIds(id);
    }
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t")
        .setSession("s")
        .setStep(step)
        .addSparseGradients(rows)
        .build();
  }

  private static float[] rows(ParameterShard shard, long... ids) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName("emb");
    for (long id : ids) {
      ref.addRowIds(id);
    }
    return TensorCodec.decode(
        shard
            .pull(PullParametersRequest.newBuilder().addSparseRows(ref).build())
            .getSparseRows(0)
            .getData());
  }
}
