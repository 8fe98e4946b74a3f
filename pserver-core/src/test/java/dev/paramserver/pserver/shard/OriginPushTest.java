package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pull;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.AppliedPushes;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushPart;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Elastic placement: a piece another pserver refused with MOVED and the trainer resent here has the
 * step and part of that server's part ({@code origin} names it): it is kept apart from this
 * server's own part of the step, applied once, and the record survives a checkpoint.
 */
class OriginPushTest {
  private ParameterShard shard;

  @BeforeEach
  void setUp() {
    shard = new ParameterShard(true);
    shard.init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 10, 10))));
    shard.finishInit(finish("i", 1));
  }

  private static PushGradientsRequest piece(long step, int origin, float g) {
    return push(gradient("w", 0, g, g)).toBuilder()
        .setSession("s")
        .setStep(step)
        .setPart(0)
        .setOrigin(origin)
        .build();
  }

  private static float value(ParameterShard s) {
    return TensorCodec.decode(s.pull(pull("w", 0)).getBlocks(0).getData())[0];
  }

  @Test
  void samePushIdentity_fromAnotherOrigin_isNotADuplicate_andEachIsAppliedOnce() {
    assertThat(shard.pushOutcome(piece(5, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(piece(5, 2, 2)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(piece(5, 2, 2)).duplicate()).isTrue();
    assertThat(shard.pushOutcome(piece(5, 0, 1)).duplicate()).isTrue();
    assertThat(value(shard)).isEqualTo(7f);
  }

  @Test
  void aResentPiece_namingAPushAppliedHere_isADuplicate_andOneNamingAnotherIsApplied() {
    // pserver 2's part 0 of step 5 (as a moved slot's record brings it)
    assertThat(shard.pushOutcome(piece(5, 3, 1)).duplicate()).isFalse();
    PushGradientsRequest.Builder resent = piece(5, 3, 2).toBuilder().setPart(1 << 15);
    PushGradientsRequest ofApplied =
        resent.clone().addResentFrom(PushPart.newBuilder().setOrigin(3).setPart(0)).build();
    assertThat(shard.pushOutcome(ofApplied).duplicate()).isTrue();
    PushGradientsRequest ofAnother =
        resent
            .clone()
            .setPart((1 << 15) + 1)
            .addResentFrom(PushPart.newBuilder().setOrigin(3).setPart(1))
            .build();
    assertThat(shard.pushOutcome(ofAnother).duplicate()).isFalse();
    assertThat(shard.pushOutcome(ofAnother).duplicate()).isTrue();
    assertThat(value(shard)).isEqualTo(7f);
  }

  @Test
  void origins_surviveACheckpoint() {
    shard.pushOutcome(piece(5, 0, 1));
    shard.pushOutcome(piece(5, 3, 2));
    ShardCheckpoint cp = shard.snapshot();
    assertThat(cp.getAppliedList()).extracting(AppliedPushes::getOrigin).containsExactly(0, 3);

    ParameterShard restored = new ParameterShard(true);
    restored.restore(cp);
    assertThat(restored.pushOutcome(piece(5, 3, 2)).duplicate()).isTrue();
    assertThat(restored.pushOutcome(piece(5, 0, 1)).duplicate()).isTrue();
    assertThat(restored.pushOutcome(piece(5, 1, 4)).duplicate()).isFalse();
    assertThat(value(restored)).isEqualTo(3f);
  }
}
