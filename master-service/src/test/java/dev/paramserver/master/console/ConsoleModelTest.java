package dev.paramserver.master.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConsoleModelTest {
  private final JobEvents events = new JobEvents(50);
  private final ConsoleModel model = new ConsoleModel(100, events);

  private static JobStatus running(int pass, int done, long records) {
    JobStatus.Builder b =
        JobStatus.newBuilder()
            .setState(JobState.RUNNING)
            .setPass(pass)
            .setTotalPasses(2)
            .setDatasetTasks(10)
            .setDatasetRecords(1000)
            .setTasks(TaskCounts.newBuilder().setDone(done).setTodo(10 - done));
    for (int p = 0; p <= pass; p++) {
      PassStatus.Builder ps = PassStatus.newBuilder().setPass(p).setStartedMs(1_000 + p * 10_000L);
      if (p < pass) {
        ps.setRecords(1000).setEndedMs(1_000 + (p + 1) * 10_000L);
        ps.setEvalReports(2).setEvalLoss(0.5).setEvalAccuracy(0.9).setEvalAuc(0.95);
      } else {
        ps.setRecords(records);
      }
      b.addPasses(ps);
    }
    return b.build();
  }

  private static PserverSample ps(int index, long registration, String initId, long pushes) {
    return new PserverSample(
        index,
        "127.0.0.1:" + (9000 + index),
        registration,
        "127.0.0.1:" + (8000 + index),
        "SERVING",
        initId,
        pushes,
        4096,
        Map.of("emb", 12L),
        pushes,
        pushes / 2,
        1.5,
        1_000,
        "");
  }

  private static TrainerSample trainer(String id, double rate, double loss, int pass) {
    return trainer(id, rate, loss, pass, 100);
  }

  private static TrainerSample trainer(
      String id, double rate, double loss, int pass, long samples) {
    return new TrainerSample(id, "127.0.0.1:1", "TRAINING", pass, 3, 2, samples, rate, loss, "");
  }

  @Test
  void progressEtaAndRecordsPerSecond_comeFromTheJobStatusAndItsChanges() {
    model.update(
        6_000, running(0, 0, 0), List.of(ps(0, 1, "a", 0)), List.of(trainer("t", 10, 2, 0)));
    model.update(
        11_000, running(0, 5, 500), List.of(ps(0, 1, "a", 50)), List.of(trainer("t", 10, 1, 0)));
    JobView.Job job = model.view().job();
    assertThat(job.state()).isEqualTo("RUNNING");
    assertThat(job.progress()).isEqualTo(0.25); // half of the first of two passes
    assertThat(job.elapsedSeconds()).isEqualTo(10.0); // since the first pass started at 1 s
    assertThat(job.etaSeconds()).isEqualTo(30.0);
    assertThat(job.recordsPerSecond()).isEqualTo(100.0); // 500 records in 5 s
    assertThat(job.tasks().done()).isEqualTo(5);
    JobView.Series series = model.view().series();
    assertThat(series.trainLoss()).containsExactly(2.0, 1.0);
    assertThat(series.time()).containsExactly(6.0, 11.0);
  }

  @Test
  void perPassCurves_holdTheTrainingLossMeanAndTheEvaluations() {
    model.update(5_000, running(0, 1, 100), List.of(), List.of(trainer("t", 10, 3, 0)));
    model.update(6_000, running(0, 2, 200), List.of(), List.of(trainer("t", 10, 1, 0)));
    model.update(12_000, running(1, 0, 0), List.of(), List.of(trainer("t", 10, 0.5, 1)));
    List<JobView.Pass> passes = model.view().passes();
    assertThat(passes).hasSize(2);
    assertThat(passes.get(0))
        .extracting(
            JobView.Pass::trainLoss,
            JobView.Pass::testLoss,
            JobView.Pass::accuracy,
            JobView.Pass::auc,
            JobView.Pass::records)
        .containsExactly(2.0, 0.5, 0.9, 0.95, 1000L);
    assertThat(passes.get(1).trainLoss()).isEqualTo(0.5);
    assertThat(passes.get(1).testLoss()).isNull();
    assertThat(events.list()).extracting(JobView.Event::message).contains("pass 2 of 2 started");
  }

  @Test
  void aPserverPushingMoreThanTwiceTheOthersMedianIsHot() {
    model.update(
        1_000,
        running(0, 0, 0),
        List.of(ps(0, 1, "a", 0), ps(1, 2, "a", 0), ps(2, 3, "a", 0)),
        List.of());
    model.update(
        2_000,
        running(0, 1, 10),
        List.of(ps(0, 1, "a", 100), ps(1, 2, "a", 100), ps(2, 3, "a", 500)),
        List.of());
    List<JobView.Pserver> ps = model.view().pservers();
    assertThat(ps).extracting(JobView.Pserver::hot).containsExactly(false, false, true);
    assertThat(ps.get(2))
        .extracting(
            JobView.Pserver::pushesPerSecond,
            JobView.Pserver::pullsPerSecond,
            JobView.Pserver::checkpointAgeSeconds,
            JobView.Pserver::applyP99Ms,
            JobView.Pserver::sparseRows)
        .containsExactly(500.0, 250.0, 1.0, 1.5, Map.of("emb", 12L));
  }

  @Test
  void aTrainerBelowHalfTheOthersMedianIsAStraggler() {
    model.update(
        1_000,
        running(0, 0, 0),
        List.of(),
        List.of(trainer("a", 100, 1, 0), trainer("b", 90, 1, 0), trainer("c", 30, 1, 0)));
    List<JobView.Trainer> tr = model.view().trainers();
    assertThat(tr).extracting(JobView.Trainer::straggler).containsExactly(false, false, true);
    assertThat(tr.get(0).lastReport()).isEqualTo(1_000L);
    assertThat(tr.get(0).passLag()).isZero();
  }

  @Test
  void aTrainerJoinedThroughTheMaster_isShownJoinedWithoutError_andIsNoStraggler() {
    assertThat(TrainerSample.hasNoAdminEndpoint("10.0.0.7:0")).isTrue();
    assertThat(TrainerSample.hasNoAdminEndpoint("10.0.0.7:8080")).isFalse();
    model.update(
        1_000,
        running(0, 0, 0),
        List.of(),
        List.of(
            trainer("a", 100, 1, 0),
            trainer("b", 100, 1, 0),
            TrainerSample.coordinated("py", "10.0.0.7:0")));
    JobView.Trainer py = model.view().trainers().get(2);
    assertThat(py.state()).isEqualTo(TrainerSample.COORDINATED);
    assertThat(py.error()).isEmpty();
    assertThat(py.straggler()).isFalse();
    assertThat(py.tasksDone()).as("unknown without an admin endpoint").isNull();
    assertThat(model.view().trainers().get(0).tasksDone())
        .as("the tasks done a trainer's status reports")
        .isEqualTo(2L);
    assertThat(model.view().trainers().get(0).straggler())
        .as("the median is over the trainers that report their status")
        .isFalse();
  }

  @Test
  void aTrainerWhoseCounterStopsShowsNoThroughputWhateverItReports_andBecomesAStraggler() {
    model.update(
        1_000,
        running(0, 0, 0),
        List.of(),
        List.of(trainer("a", 100, 1, 0, 1000), trainer("b", 100, 1, 0, 1000)));
    // a keeps training, b is stuck but still reports its last rate
    model.update(
        2_000,
        running(0, 0, 0),
        List.of(),
        List.of(trainer("a", 100, 1, 0, 1100), trainer("b", 100, 1, 0, 1000)));
    List<JobView.Trainer> tr = model.view().trainers();
    assertThat(tr.get(0).samplesPerSecond()).isEqualTo(100.0);
    assertThat(tr.get(0).straggler()).isFalse();
    assertThat(tr.get(1).samplesPerSecond()).isEqualTo(50.0);
    assertThat(tr.get(1).straggler()).isFalse();
    model.update(
        3_000,
        running(0, 0, 0),
        List.of(),
        List.of(trainer("a", 100, 1, 0, 1200), trainer("b", 100, 1, 0, 1000)));
    tr = model.view().trainers();
    assertThat(tr.get(1).samplesPerSecond()).isEqualTo(25.0);
    assertThat(tr.get(1).straggler()).isTrue();
    assertThat(model.view().job().samplesPerSecond()).isEqualTo(125.0);
  }

  @Test
  void aKilledPserverIsDownThenLostThenItsRestartAndReinitialisationAreEvents() {
    model.update(1_000, running(0, 0, 0), List.of(ps(0, 1, "a", 0), ps(1, 2, "a", 0)), List.of());
    // killed: still registered (its lease lives on) but no answer
    model.update(
        2_000,
        running(0, 0, 0),
        List.of(
            ps(0, 1, "a", 5), PserverSample.unreachable(1, "127.0.0.1:9001", 2, "x", "refused")),
        List.of());
    assertThat(model.view().pservers().get(1).state()).isEqualTo("UNREACHABLE");
    assertThat(model.view().pservers().get(1).down()).isTrue();
    // lease expired
    model.update(3_000, running(0, 0, 0), List.of(ps(0, 1, "a", 9)), List.of());
    assertThat(model.view().pservers())
        .extracting(JobView.Pserver::state)
        .containsExactly("SERVING", "LOST");
    // restarted under a new registration, then re-initialised by the trainers
    model.update(4_000, running(0, 0, 0), List.of(ps(0, 1, "a", 9), ps(1, 7, "", 0)), List.of());
    model.update(5_000, running(0, 0, 0), List.of(ps(0, 1, "a", 9), ps(1, 7, "b", 3)), List.of());
    assertThat(events.list())
        .extracting(JobView.Event::kind)
        .containsSubsequence("pserver-lost", "pserver-restart", "pserver-reinit");
    assertThat(model.view().pservers().get(1).state()).isEqualTo("SERVING");
  }

  @Test
  void theJobsEndAndTrainersComingAndGoingAreEvents() {
    model.update(1_000, running(0, 0, 0), List.of(), List.of(trainer("a", 1, 1, 0)));
    model.update(
        2_000, running(0, 0, 0), List.of(), List.of(trainer("a", 1, 1, 0), trainer("b", 1, 1, 0)));
    model.update(3_000, running(0, 0, 0), List.of(), List.of(trainer("b", 1, 1, 0)));
    model.update(
        4_000,
        running(0, 0, 0).toBuilder().setState(JobState.FAILED).setFailureReason("stopped").build(),
        List.of(),
        List.of());
    assertThat(events.list())
        .extracting(JobView.Event::message)
        .containsSubsequence(
            "trainer 'b' joined",
            "trainer 'a' left",
            "the job failed: stopped",
            "trainer 'b' left");
    assertThat(model.view().job().etaSeconds()).isNull();
  }
}
