package dev.paramserver.master.election;

import static dev.paramserver.master.election.MasterElection.State.CAMPAIGNING;
import static dev.paramserver.master.election.MasterElection.State.IDLE;
import static dev.paramserver.master.election.MasterElection.State.LEADER;
import static dev.paramserver.master.election.MasterElection.State.STEPPING_DOWN;
import static dev.paramserver.master.election.MasterElection.State.STOPPED;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The election's state machine: which transitions are allowed. */
class MasterElectionStateTest {
  @Test
  void leaderOnlyFromCampaigning_andStoppedIsFinal() {
    assertThat(MasterElection.allowed(IDLE, CAMPAIGNING)).isTrue();
    assertThat(MasterElection.allowed(CAMPAIGNING, LEADER)).isTrue();
    assertThat(MasterElection.allowed(LEADER, STEPPING_DOWN)).isTrue();
    assertThat(MasterElection.allowed(STEPPING_DOWN, CAMPAIGNING)).isTrue();
    assertThat(MasterElection.allowed(STEPPING_DOWN, STOPPED)).isTrue();

    assertThat(MasterElection.allowed(IDLE, LEADER)).isFalse();
    assertThat(MasterElection.allowed(STEPPING_DOWN, LEADER)).isFalse();
    assertThat(MasterElection.allowed(LEADER, CAMPAIGNING)).isFalse();
    for (MasterElection.State s : MasterElection.State.values()) {
      assertThat(MasterElection.allowed(STOPPED, s)).as("STOPPED -> %s", s).isFalse();
    }
  }
}
