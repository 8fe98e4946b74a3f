package dev.paramserver.master.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.master.tracking.RunTracker;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.PassStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The console's view feeds the run tracker: an evaluated pass becomes a metrics line. */
class ConsoleTrackingTest {
  @TempDir Path dir;

  @Test
  void anEvaluatedPassOfTheViewIsWrittenToTheMetricsFile() throws Exception {
    ConsoleModel model = new ConsoleModel(10, new JobEvents(10));
    JobStatus job =
        JobStatus.newBuilder()
            .setState(JobState.RUNNING)
            .setPass(1)
            .setTotalPasses(2)
            .setDatasetTasks(4)
            .addPasses(
                PassStatus.newBuilder()
                    .setPass(0)
                    .setStartedMs(1_000)
                    .setEndedMs(3_000)
                    .setRecords(100)
                    .setEvalReports(1)
                    .setEvalLoss(0.3)
                    .setEvalAccuracy(0.9))
            .addPasses(PassStatus.newBuilder().setPass(1).setStartedMs(3_000))
            .build();
    model.update(4_000, job, List.of(), List.of());
    Path metrics = dir.resolve("metrics.jsonl");
    RunTracker tracker = new RunTracker(metrics, null, "h");
    tracker.onView(model.view(), 7, 4_000);
    assertThat(Files.readAllLines(metrics))
        .singleElement()
        .asString()
        .contains("\"pass\":1", "\"step\":7", "\"testLoss\":0.3", "\"accuracy\":0.9");
  }
}
