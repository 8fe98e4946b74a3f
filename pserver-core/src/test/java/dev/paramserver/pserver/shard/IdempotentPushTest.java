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
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
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

  /** A windowed push: the trainer holds answers of every step up to {@code acked}. */
  private static PushGradientsRequest windowed(long step, int part, long acked, float g) {
    return step("a", step, part, g).toBuilder().setAcknowledgedThrough(acked).build();
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

  @Test
  void windowedSteps_arriving_outOfOrder_areEachAppliedOnce_andALowerStepIsNotTakenForADuplicate() {
    // steps 1-3 in flight at once; 2 and 3 arrive before 1 (a retry after a transient failure)
    assertThat(shard.pushOutcome(windowed(2, 0, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(windowed(3, 0, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(windowed(1, 0, 0, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(windowed(2, 0, 0, 1)).duplicate()).isTrue();
    assertThat(shard.pushOutcome(windowed(1, 0, 0, 1)).duplicate()).isTrue();
    // step 5 says 1-3 were answered; 4 never came yet and is still applied
    assertThat(shard.pushOutcome(windowed(5, 0, 3, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(windowed(4, 0, 3, 1)).duplicate()).isFalse();
    assertThat(shard.pushOutcome(windowed(3, 0, 0, 1)).duplicate()).isTrue();
    assertThat(value(shard)).isEqualTo(5f);
  }

  @Test
  void windowedRecord_survivesACheckpoint_withItsGaps() {
    shard.pushOutcome(windowed(1, 0, 0, 1));
    shard.pushOutcome(windowed(3, 0, 0, 1));
    shard.pushOutcome(windowed(3, 1, 0, 1));
    ShardCheckpoint cp = shard.snapshot();

    ParameterShard restored = new ParameterShard(true);
    restored.restore(cp);

    assertThat(restored.pushOutcome(windowed(3, 1, 0, 1)).duplicate()).isTrue();
    assertThat(restored.pushOutcome(windowed(1, 0, 0, 1)).duplicate()).isTrue();
    assertThat(restored.pushOutcome(windowed(2, 0, 0, 1)).duplicate()).as("the gap").isFalse();
    assertThat(value(restored)).isEqualTo(6f);
  }

  @Test
  void checkpointOfFormat2_isReadAsItsHighestStep() {
    shard.pushOutcome(step("a", 3, 0, 1));
    ShardCheckpoint v2 =
        shard.snapshot().toBuilder()
            .setFormatVersion(2)
            .setApplied(
                0,
                shard.snapshot().getApplied(0).toBuilder()
                    .clearCompleteThrough()
                    .clearOpenSteps()
                    .build())
            .build();

    ParameterShard restored = new ParameterShard(true);
    restored.restore(v2);

    assertThat(restored.pushOutcome(step("a", 2, 0, 1)).duplicate()).isTrue();
    assertThat(restored.pushOutcome(step("a", 3, 0, 1)).duplicate()).isTrue();
    assertThat(restored.pushOutcome(step("a", 3, 1, 1)).duplicate()).isFalse();
  }

  @Test
  void windowedStep_tooFarAboveItsAcknowledgement_isRefusedNamingTheWindow_andChangesNothing() {
    ShardCheckpoint before = shard.snapshot().toBuilder().clearCreatedMs().build();
    assertThatThrownBy(() -> shard.pushOutcome(windowed(1026, 0, 1, 1)))
        .isInstanceOfSatisfying(
            ServiceException.class,
            e -> assertThat(e.reason()).isEqualTo(ErrorReason.PUSH_WINDOW_EXCEEDED))
        .hasMessageContaining("1025 steps above acknowledged_through 1")
        .hasMessageContaining("1024");
    assertThatThrownBy(() -> shard.pushOutcome(windowed(4, 0, 4, 1)))
        .isInstanceOfSatisfying(
            ServiceException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.BAD_ARGUMENT))
        .hasMessageContaining("must be below the step");
    assertThat(shard.snapshot().toBuilder().clearCreatedMs().build()).isEqualTo(before);
    assertThat(shard.pushOutcome(windowed(1025, 0, 1, 1)).duplicate()).isFalse();
  }
}
