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

import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Pushes identified by (trainer, session, step, part) are applied once, also across a restore. */
class IdempotentPushTest {
  private ParameterShard shard;

  @BeforeEach
  void setUp() {
    shard = new ParameterShard(true);
    shard.init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 10, 10))));
    shard.finishInit(finish("i", 1));
  }

  private static PushGradientsRequest step(String session, long step, int part, float g) {
    return push(gradient("w", 0, g, g)).toBuilder()
        .setSession(session)
        .setStep(step)
        .setPart(part)
        .build();
  }

  private float value(ParameterShard s) {
    return TensorCodec.decode(s.pull(pull("w", 0)).getBlocks(0).getData())[0];
  }

  @Test
  void repeatedPush_isAnsweredDuplicate_andAppliedOnce() {
    PushOutcome first = shard.pushOutcome(step("a", 1, 0, 1));
    PushOutcome again = shard.pushOutcome(step("a", 1, 0, 1));

    assertThat(first.duplicate()).isFalse();
    assertThat(again.duplicate()).isTrue();
    assertThat(again.step()).isEqualTo(1);
    assertThat(value(shard)).isEqualTo(9f);
  }

  @Test
  void partsOfAStep_applyInAnyOrder_andAnEarlierStepIsADuplicate() {
    assertThat(shard.pushOutcome(step("a", 1, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(step("a", 2, 1, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(step("a", 2, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(step("a", 2, 1, 1)).duplicate()).isTrue();
    assertThat(shard.pushOutcome(step("a", 1, 0, 1)).duplicate()).isTrue();
    assertThat(shard.pushOutcome(step("a", 1, 3, 1)).duplicate()).isTrue();
    assertThat(value(shard)).isEqualTo(7f);
  }

  @Test
  void anotherSession_andUnidentifiedPushes_areAlwaysApplied() {
    shard.pushOutcome(step("a", 5, 0, 1));
    assertThat(shard.pushOutcome(step("b", 1, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(step("a", 0, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(step("a", 0, 0, 1)).duplicate()).isFalse();
    assertThat(value(shard)).isEqualTo(6f);
  }

  @Test
  void restoredShard_remembersWhatWasApplied() {
    shard.pushOutcome(step("a", 3, 0, 1));
    shard.pushOutcome(step("a", 3, 2, 1));
    ShardCheckpoint cp = shard.snapshot();

    ParameterShard restored = new ParameterShard(true);
    restored.restore(cp);

    assertThat(restored.pushOutcome(step("a", 3, 2, 1)).duplicate()).isTrue();
    assertThat(restored.pushOutcome(step("a", 3, 1, 1)).duplicate()).isFalse();
    assertThat(value(restored)).isEqualTo(7f);
  }

  @Test
  void restore_ofACheckpointWithoutTheRecord_loadsWithNoPushApplied() {
    ShardCheckpoint old = shard.snapshot().toBuilder().clearApplied().clearWalSegment().build();

    ParameterShard restored = new ParameterShard(true);
    restored.restore(old);

    assertThat(restored.pushOutcome(step("a", 1, 0, 1)).duplicate()).isFalse();
  }
}
