package dev.paramserver.master.placement;

import static dev.paramserver.master.placement.ScalingPhase.DRAINING;
import static dev.paramserver.master.placement.ScalingPhase.FAILED;
import static dev.paramserver.master.placement.ScalingPhase.IDLE;
import static dev.paramserver.master.placement.ScalingPhase.MOVING;
import static dev.paramserver.master.placement.ScalingPhase.WAITING_FOR_PSERVERS;
import static dev.paramserver.master.placement.ScalingPhase.WAITING_FOR_REGISTRATION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The scaling coordinator's phases: the transition table, pinned, and the console's texts. */
class ScalingPhaseTest {

  @Test
  void theTable_allowsExactlyTheseMoves() {
    List<String> allowed = new ArrayList<>();
    for (ScalingPhase from : ScalingPhase.values()) {
      for (ScalingPhase to : ScalingPhase.values()) {
        if (from != to && from.canMoveTo(to)) {
          allowed.add(from + "->" + to);
        }
      }
    }
    assertThat(allowed)
        .containsExactlyInAnyOrder(
            "IDLE->WAITING_FOR_REGISTRATION",
            "IDLE->WAITING_FOR_PSERVERS",
            "IDLE->MOVING",
            "IDLE->DRAINING",
            "IDLE->FAILED",
            "WAITING_FOR_REGISTRATION->WAITING_FOR_PSERVERS",
            "WAITING_FOR_REGISTRATION->MOVING",
            "WAITING_FOR_REGISTRATION->IDLE",
            "WAITING_FOR_REGISTRATION->FAILED",
            "WAITING_FOR_PSERVERS->WAITING_FOR_REGISTRATION",
            "WAITING_FOR_PSERVERS->MOVING",
            "WAITING_FOR_PSERVERS->DRAINING",
            "WAITING_FOR_PSERVERS->IDLE",
            "WAITING_FOR_PSERVERS->FAILED",
            "MOVING->WAITING_FOR_REGISTRATION",
            "MOVING->WAITING_FOR_PSERVERS",
            "MOVING->DRAINING",
            "MOVING->IDLE",
            "MOVING->FAILED",
            "DRAINING->IDLE",
            "DRAINING->FAILED",
            "FAILED->WAITING_FOR_REGISTRATION",
            "FAILED->WAITING_FOR_PSERVERS",
            "FAILED->MOVING",
            "FAILED->DRAINING",
            "FAILED->IDLE");
  }

  @Test
  void stayingInAPhase_isAlwaysAllowed() {
    for (ScalingPhase p : ScalingPhase.values()) {
      assertThat(p.to(p)).isEqualTo(p);
    }
  }

  @Test
  void anIllegalMove_throws_namingBothPhases() {
    assertThatThrownBy(() -> DRAINING.to(MOVING))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("from DRAINING to MOVING");
    assertThatThrownBy(() -> WAITING_FOR_REGISTRATION.to(DRAINING))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("from WAITING_FOR_REGISTRATION to DRAINING");
  }

  @Test
  void theConsolesTexts_areThoseItAlwaysShowed() {
    assertThat(IDLE.describe(null)).isEqualTo("idle");
    assertThat(MOVING.describe(null)).isEqualTo("moving");
    assertThat(FAILED.describe(null)).isEqualTo("failed");
    assertThat(WAITING_FOR_PSERVERS.describe("io error"))
        .isEqualTo("waiting for the pservers to answer");
    assertThat(WAITING_FOR_REGISTRATION.describe("3"))
        .isEqualTo("waiting for pserver 3 to register");
    assertThat(DRAINING.describe("2, 3")).isEqualTo("draining pserver 2, 3");
  }
}
