package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TrainingProgressTest {
  private final TrainingProgress progress = new TrainingProgress();

  @Test
  void session_movesForward_andEndsInAFinalState() {
    assertThat(progress.state()).isEqualTo(TrainerState.STARTING);
    assertThat(progress.moveTo(TrainerState.WAITING_FOR_PSERVERS)).isTrue();
    assertThat(progress.moveTo(TrainerState.INITIALISING)).isTrue();
    assertThat(progress.moveTo(TrainerState.TRAINING)).isTrue();
    assertThat(progress.moveTo(TrainerState.EVALUATING)).isTrue();
    assertThat(progress.moveTo(TrainerState.TRAINING)).isTrue();
    assertThat(progress.moveTo(TrainerState.FINISHED)).isTrue();
    assertThat(TrainerState.FINISHED.isFinal()).isTrue();
    assertThat(progress.moveTo(TrainerState.TRAINING)).isFalse();
    assertThat(progress.state()).isEqualTo(TrainerState.FINISHED);
  }

  @Test
  void moves_notAllowed_areRefused() {
    assertThat(progress.moveTo(TrainerState.TRAINING)).isFalse();
    assertThat(progress.state()).isEqualTo(TrainerState.STARTING);
    assertThat(TrainerState.STOPPING.canMoveTo(TrainerState.TRAINING)).isFalse();
    assertThat(TrainerState.STOPPED.canMoveTo(TrainerState.STARTING)).isFalse();
  }

  @Test
  void aStop_winsOverTheSessionsNextMove() {
    progress.moveTo(TrainerState.WAITING_FOR_PSERVERS);
    progress.moveTo(TrainerState.STOPPING);
    assertThat(progress.moveTo(TrainerState.INITIALISING)).isFalse();
    assertThat(progress.moveTo(TrainerState.STOPPED)).isTrue();
  }

  @Test
  void fail_keepsTheReason_forTheStatus() {
    progress.batch(10, 0.5);
    progress.fail("pserver 0 rejected fc1.w");
    assertThat(progress.state()).isEqualTo(TrainerState.FAILED);
    assertThat(progress.details())
        .containsEntry("failure", "pserver 0 rejected fc1.w")
        .containsEntry("samples", 10L)
        .containsEntry("batches", 1L)
        .containsEntry("loss", 0.5)
        .containsKeys("pass", "task", "tasksDone", "samplesPerSecond");
  }

  @Test
  void details_hideALossNotYetKnown() {
    assertThat(progress.details()).containsEntry("loss", null).doesNotContainKey("failure");
  }
}
