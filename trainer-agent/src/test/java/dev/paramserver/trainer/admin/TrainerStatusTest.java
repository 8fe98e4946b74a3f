package dev.paramserver.trainer.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.trainer.pserver.PserverTraffic;
import dev.paramserver.trainer.testing.TestProperties;
import dev.paramserver.trainer.training.TrainerMetrics;
import dev.paramserver.trainer.training.TrainerState;
import dev.paramserver.trainer.training.TrainingProgress;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** The admin status and the metrics read the same progress and traffic counts. */
class TrainerStatusTest {
  private final TrainingProgress progress = new TrainingProgress();
  private final PserverTraffic traffic = new PserverTraffic();
  private final TrainerStatus status =
      new TrainerStatus(TestProperties.of("/d/*.rio", null, true, null), progress, traffic);

  @Test
  void status_showsRoleIdentityStateAndCounts() {
    progress.moveTo(TrainerState.WAITING_FOR_PSERVERS);
    assertThat(status.role()).isEqualTo("trainer");
    assertThat(status.identity()).isEqualTo("t-test");
    assertThat(status.state()).isEqualTo("WAITING_FOR_PSERVERS");
    assertThat(status.details())
        .containsEntry("model", "softmax")
        .containsEntry("optimizer", "sgd")
        .containsEntry("bytesPushed", 0L)
        .containsEntry("bytesPulled", 0L)
        .containsEntry("droppedPushes", 0L)
        .containsEntry("acknowledgedPushes", java.util.Map.of())
        .containsKeys("pass", "task", "tasksDone", "batches", "samples", "loss");
  }

  @Test
  void metrics_keepTheirNames() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new TrainerMetrics(registry, progress, traffic);
    for (String name :
        new String[] {
          "paramserver.trainer.samples",
          "paramserver.trainer.batches",
          "paramserver.trainer.tasks",
          "paramserver.trainer.loss",
          "paramserver.trainer.samples.per.second",
          "paramserver.trainer.pass",
          "paramserver.trainer.eval.loss",
          "paramserver.trainer.eval.accuracy",
          "paramserver.trainer.bytes.pushed",
          "paramserver.trainer.bytes.pulled",
          "paramserver.trainer.dropped.pushes"
        }) {
      assertThat(registry.find(name).meter()).as(name).isNotNull();
    }
    assertThat(registry.find("paramserver.trainer.tasks").tag("outcome", "handed_back").meter())
        .isNotNull();
    assertThat(registry.get("paramserver.trainer.samples").functionCounter().count()).isZero();
  }
}
