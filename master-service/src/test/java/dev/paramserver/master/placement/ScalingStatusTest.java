package dev.paramserver.master.placement;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import org.junit.jupiter.api.Test;

/** The coordinator's records of a move, as the console and {@code psctl scale} show them. */
class ScalingStatusTest {
  private static final SlotMove MOVE =
      SlotMove.newBuilder()
          .setId("e3-0to2")
          .setEpoch(3)
          .setFrom(0)
          .setTo(2)
          .addSlots(7)
          .addSlots(9)
          .build();

  @Test
  void aMoveUnderWay_hasNoResultNorFigures() {
    assertThat(ScalingStatus.move(MOVE, null, null, null))
        .isEqualTo(
            new JobView.Move("e3-0to2", 3, 0, 2, 2, 0, null, null, null, null, null, null, null));
  }

  @Test
  void aCommittedMove_carriesTheOldOwnersFigures_andItsDuration() {
    MoveOutResponse answer =
        MoveOutResponse.newBuilder()
            .setBytes(4096)
            .setRecords(12)
            .setRows(300)
            .setCopyMs(40)
            .setStallMs(6)
            .build();
    assertThat(ScalingStatus.move(MOVE, "committed", answer, 95L))
        .isEqualTo(
            new JobView.Move(
                "e3-0to2", 3, 0, 2, 2, 0, "committed", 4096L, 12L, 300L, 40L, 6L, 95L));
  }

  @Test
  void aRolledBackMove_saysWhy_withoutFigures() {
    JobView.Move m = ScalingStatus.move(MOVE, "rolled back: pserver 2 did not answer", null, null);
    assertThat(m.result()).isEqualTo("rolled back: pserver 2 did not answer");
    assertThat(m.bytes()).isNull();
    assertThat(m.durationMs()).isNull();
  }
}
