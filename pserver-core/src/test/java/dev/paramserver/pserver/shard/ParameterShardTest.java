package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pull;
import static dev.paramserver.pserver.shard.Requests.pullAll;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;
import org.junit.jupiter.api.Test;

class ParameterShardTest {
  // "w" has 6 elements in blocks of 4: block 0 = 4 values, block 1 = 2 values.
  private static final ParameterSpec W = dense("w", 6, 4, sgd(0.5f));

  private static ParameterShard initialised() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init("init-1", List.of(W), List.of(block("w", 0, 4, 1, 2, 3, 4), block("w", 1, 4, 5, 6))));
    shard.finishInit(finish("init-1", 2));
    return shard;
  }

  private static float[] values(PullParametersResponse r, int i) {
    return TensorCodec.decode(r.getBlocks(i).getData());
  }

  private static ErrorReason reasonOf(Runnable r) {
    try {
      r.run();
    } catch (ServiceException e) {
      return e.reason();
    }
    throw new AssertionError("expected a ServiceException");
  }

  @Test
  void pushAndPull_beforeFinishInit_failWithNotInitialisedSayingWhatToCall() {
    ParameterShard shard = new ParameterShard(true);
    assertThatThrownBy(() -> shard.push(push(gradient("w", 0, 1, 1, 1, 1))))
        .isInstanceOfSatisfying(
            ServiceException.class,
            e -> assertThat(e.reason()).isEqualTo(ErrorReason.NOT_INITIALIZED))
        .hasMessageContaining("call InitParameters and FinishInit first");
    shard.init(init("i", List.of(W), List.of(block("w", 0, 4, 1, 2, 3, 4))));
    assertThat(reasonOf(() -> shard.pull(pullAll()))).isEqualTo(ErrorReason.NOT_INITIALIZED);
  }

  @Test
  void sgd_overSeveralPushes_matchesHandComputation() {
    ParameterShard shard = initialised();
    // lr 0.5: w0 = [1,2,3,4]; g = [1,2,-2,0.5] twice, then [0,0,4,-1].
    // after push 1: [1-0.5, 2-1, 3+1, 4-0.25] = [0.5, 1, 4, 3.75]
    // after push 2: [0, 0, 5, 3.5]
    // after push 3: [0, 0, 5-2, 3.5+0.5] = [0, 0, 3, 4]
    assertThat(shard.push(push(gradient("w", 0, 1, 2, -2, 0.5f)))).isEqualTo(1);
    assertThat(values(shard.pull(pull("w", 0)), 0)).containsExactly(0.5f, 1f, 4f, 3.75f);
    assertThat(shard.push(push(gradient("w", 0, 1, 2, -2, 0.5f)))).isEqualTo(2);
    assertThat(shard.push(push(gradient("w", 0, 0, 0, 4, -1), gradient("w", 1, 2, -2))))
        .isEqualTo(3);
    PullParametersResponse all = shard.pull(pullAll());
    assertThat(all.getStep()).isEqualTo(3);
    assertThat(all.getBlocksList()).extracting(TensorBlock::getBlock).containsExactly(0, 1);
    assertThat(values(all, 0)).containsExactly(0f, 0f, 3f, 4f);
    // block 1: [5,6] - 0.5*[2,-2] = [4, 7]
    assertThat(values(all, 1)).containsExactly(4f, 7f);
    assertThat(all.getBlocks(1).getOffset()).isEqualTo(4);
  }

  @Test
  void halfPrecisionGradients_areDecoded() {
    ParameterShard shard = initialised();
    TensorBlock g =
        gradient("w", 1).toBuilder()
            .setDtype(DataType.BFLOAT16)
            .setData(TensorCodec.encode(new float[] {2f, -4f}, 0, 2, DataType.BFLOAT16))
            .build();
    shard.push(push(g));
    assertThat(values(shard.pull(pull("w", 1)), 0)).containsExactly(4f, 8f);
  }

  @Test
  void init_repeatedIdentically_isNoOp_andDifferentDefinitionConflicts() {
    ParameterShard shard = initialised();
    shard.push(push(gradient("w", 1, 2, 2)));
    // Same init again (a retry after FinishInit): nothing changes.
    assertThat(shard.init(init("init-1", List.of(W), List.of(block("w", 0, 4, 1, 2, 3, 4)))))
        .isEqualTo(2);
    shard.finishInit(finish("init-1", 2));
    assertThat(values(shard.pull(pull("w", 1)), 0)).containsExactly(4f, 5f);

    ParameterSpec other = dense("w", 8, 4, sgd(0.5f));
    assertThatThrownBy(() -> shard.init(init("init-1", List.of(other), List.of())))
        .isInstanceOfSatisfying(
            ServiceException.class,
            e -> assertThat(e.reason()).isEqualTo(ErrorReason.INIT_CONFLICT))
        .hasMessageContaining("parameter 'w' is already defined");
    assertThat(reasonOf(() -> shard.init(init("init-2", List.of(W), List.of()))))
        .isEqualTo(ErrorReason.INIT_CONFLICT);
    assertThat(reasonOf(() -> shard.finishInit(finish("init-2", 2))))
        .isEqualTo(ErrorReason.INIT_CONFLICT);
  }

  @Test
  void init_sentInSeveralCalls_thenFinishChecksTheCount() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(init("i", List.of(W), List.of(block("w", 0, 4, 1, 2, 3, 4))));
    assertThatThrownBy(() -> shard.finishInit(finish("i", 2)))
        .isInstanceOfSatisfying(
            ServiceException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.BAD_ARGUMENT))
        .hasMessageContaining("expects 2 dense blocks but this pserver holds 1");
    assertThat(shard.initialised()).isFalse();
    assertThat(shard.init(init("i", List.of(), List.of(block("w", 1, 4, 5, 6))))).isEqualTo(2);
    shard.finishInit(finish("i", 2));
    assertThat(shard.initialised()).isTrue();
    ShardStatus status = shard.status();
    assertThat(status.getInitId()).isEqualTo("i");
    assertThat(status.getBlocks()).isEqualTo(2);
    assertThat(status.getParameters()).isEqualTo(1);
    assertThat(status.getParameterBytes()).isEqualTo(24);
  }

  @Test
  void init_withDifferentValuesForTheSameBlock_conflictsBeforeFinish() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(init("i", List.of(W), List.of(block("w", 0, 4, 1, 2, 3, 4))));
    assertThat(
            reasonOf(
                () -> shard.init(init("i", List.of(W), List.of(block("w", 0, 4, 9, 2, 3, 4))))))
        .isEqualTo(ErrorReason.INIT_CONFLICT);
  }

  @Test
  void init_byNewInitialiser_replacesAnUnfinishedInit() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(init("old", List.of(W), List.of(block("w", 0, 4, 1, 2, 3, 4))));
    shard.init(init("new", List.of(W), List.of(block("w", 1, 4, 7, 8))));
    shard.finishInit(finish("new", 1));
    assertThat(shard.status().getBlockRefsList()).hasSize(1);
    assertThat(values(shard.pull(pullAll()), 0)).containsExactly(7f, 8f);
  }

  @Test
  void init_rejectsBadOptimizerAndDtype() {
    ParameterShard shard = new ParameterShard(true);
    ParameterSpec badLr =
        dense("w", 6, 4, OptimizerConfig.newBuilder().setLearningRate(-1).build());
    assertThat(reasonOf(() -> shard.init(init("i", List.of(badLr), List.of()))))
        .isEqualTo(ErrorReason.BAD_OPTIMIZER);
    ParameterSpec f64 = W.toBuilder().setDtype(DataType.FLOAT64).build();
    assertThat(reasonOf(() -> shard.init(init("i", List.of(f64), List.of()))))
        .isEqualTo(ErrorReason.UNSUPPORTED_DTYPE);
    assertThat(
            reasonOf(() -> shard.init(init("i", List.of(W), List.of(block("w", 0, 4, 1, 2, 3))))))
        .isEqualTo(ErrorReason.SHAPE_MISMATCH);
    assertThat(shard.status().getParameters()).isZero();
  }

  @Test
  void badPushes_areRejectedWithTheirReason_andChangeNothing() {
    ParameterShard shard = initialised();
    PullParametersResponse before = shard.pull(pullAll());
    TensorBlock good = gradient("w", 1, 1, 1);

    List<Object[]> cases =
        List.of(
            new Object[] {
              push(good, gradient("v", 0, 1, 1, 1, 1)),
              ErrorReason.UNKNOWN_PARAMETER,
              "parameter 'v'"
            },
            new Object[] {
              push(good, gradient("w", 2, 1, 1)),
              ErrorReason.UNKNOWN_PARAMETER,
              "parameter 'w' block 2"
            },
            new Object[] {
              push(good, gradient("w", 0, 1, 1, 1)),
              ErrorReason.SHAPE_MISMATCH,
              "parameter 'w' block 0 expects 4 float32 values, got 3"
            },
            new Object[] {
              push(
                  good,
                  gradient("w", 0).toBuilder()
                      .setDtype(DataType.FLOAT64)
                      .setData(ByteString.copyFrom(new byte[32]))
                      .build()),
              ErrorReason.UNSUPPORTED_DTYPE,
              "FLOAT64"
            },
            new Object[] {
              push(good, gradient("w", 0, 1, Float.NaN, 1, 1)),
              ErrorReason.NON_FINITE_GRADIENT,
              "NaN"
            },
            new Object[] {
              push(good, gradient("w", 0, 1, Float.POSITIVE_INFINITY, 1, 1)),
              ErrorReason.NON_FINITE_GRADIENT,
              "Infinity"
            });
    for (Object[] c : cases) {
      PushGradientsRequest request = (PushGradientsRequest) c[0];
      assertThatThrownBy(() -> shard.push(request))
          .isInstanceOfSatisfying(
              ServiceException.class, e -> assertThat(e.reason()).isEqualTo(c[1]))
          .hasMessageContaining((String) c[2]);
    }
    PullParametersResponse after = shard.pull(pullAll());
    assertThat(after).isEqualTo(before);
    assertThat(after.getStep()).isZero();
  }

  @Test
  void nonFiniteGradients_areAppliedWhenRejectionIsOff() {
    ParameterShard shard = new ParameterShard(false);
    shard.init(init("i", List.of(W), List.of(block("w", 1, 4, 5, 6))));
    shard.finishInit(finish("i", 1));
    shard.push(push(gradient("w", 1, Float.NaN, 0)));
    assertThat(values(shard.pull(pullAll()), 0)[0]).isNaN();
  }

  @Test
  void pull_ofUnknownBlock_isUnknownParameter() {
    ParameterShard shard = initialised();
    assertThat(reasonOf(() -> shard.pull(pull("w", 5)))).isEqualTo(ErrorReason.UNKNOWN_PARAMETER);
  }

  @Test
  void draining_rejectsPushesWithShuttingDown() {
    ParameterShard shard = initialised();
    shard.beginDraining();
    assertThat(reasonOf(() -> shard.push(push(gradient("w", 1, 1, 1)))))
        .isEqualTo(ErrorReason.SHUTTING_DOWN);
  }
}
