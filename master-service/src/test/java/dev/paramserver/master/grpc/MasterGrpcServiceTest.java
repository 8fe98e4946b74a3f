package dev.paramserver.master.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.protobuf.Value;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.GetTaskRequest;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.GetTaskResponse.Outcome;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.LossWindow;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.proto.v1.ReportEvaluationRequest;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.proto.v1.TaskFailedRequest;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The Master service over the in-process transport: answers, status codes and reasons. */
class MasterGrpcServiceTest {
  @TempDir Path dir;
  @RegisterExtension final InProcessGrpc grpc = new InProcessGrpc();
  private MasterJob job;
  private MasterGrpc.MasterBlockingStub stub;

  @BeforeEach
  void start() throws IOException {
    MasterProperties props =
        new MasterProperties(
            2,
            2,
            Duration.ofSeconds(60),
            2,
            Duration.ofSeconds(1),
            Duration.ofMillis(250),
            MasterProperties.AdaptiveTimeout.disabled(),
            0,
            MasterProperties.Console.defaults(),
            MasterProperties.Tracking.off(),
            0,
            0);
    job = new MasterJob(props, JobStore.NONE, Clock.systemUTC());
    job.startServing("127.0.0.1:7001");
    stub =
        MasterGrpc.newBlockingStub(
            grpc.startDirect(
                ServerInterceptors.intercept(
                    new MasterGrpcService(job), new ErrorMappingInterceptor())));
    for (String f : new String[] {"train-0.rio", "train-1.rio"}) {
      try (RecordWriter w = RecordWriter.create(dir.resolve(f), Compressor.NONE, 5)) {
        for (int i = 0; i < 10; i++) {
          w.write(new byte[] {(byte) i});
        }
      }
    }
  }

  private MasterGrpc.MasterBlockingStub call() {
    return stub.withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  private SetDatasetResponse setDataset(String glob) {
    return call()
        .setDataset(SetDatasetRequest.newBuilder().addGlobs(glob).setTrainerId("t1").build());
  }

  private GetTaskResponse getTask(String trainer, int pass) {
    return call().getTask(GetTaskRequest.newBuilder().setTrainerId(trainer).setPass(pass).build());
  }

  private static void assertError(
      Runnable call, Status.Code code, ErrorReason reason, String text) {
    Throwable t = catchThrowable(call::run);
    assertThat(RpcErrors.codeOf(t)).as("status code of %s", t).isEqualTo(code);
    assertThat(RpcErrors.reasonOf(t)).as("reason of %s", t).isEqualTo(reason);
    assertThat(Status.fromThrowable(t).getDescription()).contains(text);
  }

  @Test
  void getTask_beforeSetDataset_failsWithNoDataset() {
    assertError(
        () -> getTask("t1", 0),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NO_DATASET,
        "call SetDataset first");
    assertThat(call().getStatus(GetStatusRequest.getDefaultInstance()).getState())
        .isEqualTo(JobState.WAITING_FOR_DATASET);
  }

  @Test
  void setDataset_firstWins_sameIsNoOp_differentIsConflictNamingBoth() {
    String glob = dir + "/train-*.rio";
    SetDatasetResponse first = setDataset(glob);
    assertThat(first.getAlreadySet()).isFalse();
    assertThat(first.getFiles()).isEqualTo(2);
    assertThat(first.getChunks()).isEqualTo(4);
    assertThat(first.getTasks()).isEqualTo(2);
    assertThat(first.getRecords()).isEqualTo(20);
    assertThat(first.getPasses()).isEqualTo(2);

    assertThat(setDataset(glob).getAlreadySet()).isTrue();

    String other = dir + "/train-0.rio";
    assertError(
        () -> setDataset(other),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.DATASET_CONFLICT,
        glob);
    assertError(
        () -> setDataset(other),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.DATASET_CONFLICT,
        other);
  }

  @Test
  void setDataset_unmatchedGlob_isInvalidArgumentNamingTheGlob() {
    String glob = dir + "/nothing-*.rio";
    assertError(
        () -> setDataset(glob), Status.Code.INVALID_ARGUMENT, ErrorReason.DATASET_UNREADABLE, glob);
  }

  @Test
  void taskLifecycle_overGrpc_dispatchFinishStaleAndStatus() {
    setDataset(dir + "/train-*.rio");
    GetTaskResponse a = getTask("t1", 0);
    assertThat(a.getOutcome()).isEqualTo(GetTaskResponse.Outcome.TASK);
    assertThat(a.getTask().getId()).isEqualTo(0);
    assertThat(a.getTask().getEpoch()).isEqualTo(1);
    assertThat(a.getTask().getChunksList()).hasSize(2);
    assertThat(a.getTask().getChunks(0).getPath()).endsWith("train-0.rio");
    assertThat(a.getTotalPasses()).isEqualTo(2);

    GetTaskResponse b = getTask("t2", 0);
    assertThat(b.getTask().getId()).isEqualTo(1);
    GetTaskResponse wait = getTask("t3", 0);
    assertThat(wait.getOutcome()).isEqualTo(GetTaskResponse.Outcome.WAIT);
    assertThat(wait.getRetryAfterMs()).isEqualTo(250);

    assertThat(finish("t1", 0, 1)).isTrue();
    assertThat(finish("t1", 0, 1)).as("duplicate").isFalse();
    assertThat(finish("t2", 1, 7)).as("stale epoch").isFalse();
    assertThat(
            call()
                .taskFailed(
                    TaskFailedRequest.newBuilder()
                        .setTrainerId("t2")
                        .setTaskId(1)
                        .setEpoch(1)
                        .setHandedBack(true)
                        .build())
                .getAccepted())
        .isTrue();
    GetTaskResponse again = getTask("t3", 0);
    assertThat(again.getTask().getId()).isEqualTo(1);
    assertThat(again.getTask().getEpoch()).isEqualTo(2);
    assertThat(finish("t3", 1, 2)).isTrue();

    assertThat(getTask("t1", 0).getOutcome()).isEqualTo(GetTaskResponse.Outcome.PASS_FINISHED);
    assertThat(getTask("t1", 2).getOutcome()).isEqualTo(GetTaskResponse.Outcome.PASS_NOT_STARTED);
    call()
        .reportEvaluation(
            ReportEvaluationRequest.newBuilder()
                .setTrainerId("t1")
                .setPass(0)
                .setLoss(0.5)
                .setAccuracy(0.9)
                .build());

    JobStatus status = call().getStatus(GetStatusRequest.getDefaultInstance());
    assertThat(status.getState()).isEqualTo(JobState.RUNNING);
    assertThat(status.getPass()).isEqualTo(1);
    assertThat(status.getMasterId()).isEqualTo("127.0.0.1:7001");
    assertThat(status.getDatasetRecords()).isEqualTo(20);
    assertThat(status.getPasses(0).getRecords()).isEqualTo(20);
    assertThat(status.getPasses(0).getDuplicates()).isEqualTo(1);
    assertThat(status.getPasses(0).getTrainersList()).containsExactly("t1", "t2", "t3");
    assertThat(status.getPasses(0).getEvalAccuracy()).isEqualTo(0.9);
    assertThat(status.getPasses(0).getEvalReports()).isEqualTo(1);
  }

  @Test
  void getTask_recordsTheTasksItReportsFinished_beforeHandingOutTheNext() {
    setDataset(dir + "/train-*.rio");
    GetTaskResponse a = getTask("t1", 0);
    GetTaskResponse b = getTask("t2", 0);
    assertThat(b.getTask().getId()).isEqualTo(1);

    GetTaskResponse afterA = getTaskReporting("t1", 0, a.getTask());
    assertThat(afterA.getOutcome()).as("task 1 still pending").isEqualTo(Outcome.WAIT);
    GetTaskResponse afterB = getTaskReporting("t2", 0, b.getTask());
    assertThat(afterB.getOutcome()).isEqualTo(Outcome.PASS_FINISHED);
    assertThat(afterB.getCurrentPass()).isEqualTo(1);
    // a report seen before is ignored, as TaskFinished ignores it
    assertThat(getTaskReporting("t1", 1, a.getTask()).getOutcome()).isEqualTo(Outcome.TASK);

    JobStatus status = call().getStatus(GetStatusRequest.getDefaultInstance());
    assertThat(status.getPasses(0).getRecords()).isEqualTo(20);
  }

  @Test
  void getTask_withHold_holdsAWaitForATrainerWithoutTask_untilThePassEnds() throws Exception {
    setDataset(dir + "/train-*.rio");
    Task a = getTask("t1", 0).getTask();
    Task b = getTask("t2", 0).getTask();

    // t1 holds a task: the pass may be waiting for it, so it is answered at once
    GetTaskResponse holder = call().getTask(holdRequest("t1"));
    assertThat(holder.getOutcome()).isEqualTo(Outcome.WAIT);
    assertThat(holder.getRetryAfterMs()).isEqualTo(250);
    // t3 holds none: with nothing changing, the WAIT comes after the hold, to be asked again now
    long start = System.nanoTime();
    GetTaskResponse idle = call().getTask(holdRequest("t3"));
    assertThat(idle.getOutcome()).isEqualTo(Outcome.WAIT);
    assertThat(idle.getRetryAfterMs()).isZero();
    assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(200_000_000L);

    // a held call answers as soon as there is something to say: once a is done, a task of the
    // next pass may be leased ahead (an asynchronous trainer's hold allows it) while b is still
    // pending; once b is done too, the pass has ended
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try {
      Future<GetTaskResponse> held = thread.submit(() -> call().getTask(holdRequest("t3")));
      assertThat(finish("t1", a.getId(), a.getEpoch())).isTrue();
      assertThat(finish("t2", b.getId(), b.getEpoch())).isTrue();
      GetTaskResponse answer = held.get(10, TimeUnit.SECONDS);
      assertThat(answer.getOutcome()).isIn(Outcome.PASS_FINISHED, Outcome.TASK);
      if (answer.getOutcome() == Outcome.TASK) {
        assertThat(answer.getTask().getPass()).as("a task leased ahead").isEqualTo(1);
      }
    } finally {
      thread.shutdownNow();
    }
  }

  @Test
  void getTask_withMaxTasks_handsOutExtraTasksWithinAFairShare() throws Exception {
    Path many = dir.resolve("many");
    Files.createDirectories(many);
    // 160 records in chunks of 5, 2 chunks a task: 16 tasks
    try (RecordWriter w = RecordWriter.create(many.resolve("train-0.rio"), Compressor.NONE, 5)) {
      for (int i = 0; i < 160; i++) {
        w.write(new byte[] {(byte) i});
      }
    }
    setDataset(many + "/train-*.rio");
    GetTaskRequest.Builder req = GetTaskRequest.newBuilder().setPass(0).setMaxTasks(16);
    GetTaskResponse first = call().getTask(req.setTrainerId("t1").build());
    assertThat(first.getOutcome()).isEqualTo(Outcome.TASK);
    // one trainer known: at most half of the 16 tasks todo
    assertThat(first.getMoreTasksCount() + 1).isEqualTo(8);
    GetTaskResponse second = call().getTask(req.setTrainerId("t2").build());
    // two trainers, 8 todo: a quarter
    assertThat(second.getMoreTasksCount() + 1).isEqualTo(2);
    List<Long> ids = new ArrayList<>();
    ids.add(first.getTask().getId());
    first.getMoreTasksList().forEach(t -> ids.add(t.getId()));
    ids.add(second.getTask().getId());
    second.getMoreTasksList().forEach(t -> ids.add(t.getId()));
    assertThat(ids).doesNotHaveDuplicates().hasSize(10);
    // each extra task is held like the first: its finish is accepted
    Task extra = first.getMoreTasks(0);
    assertThat(finish("t1", extra.getId(), extra.getEpoch())).isTrue();
    JobStatus status = call().getStatus(GetStatusRequest.getDefaultInstance());
    assertThat(status.getTasks().getPending()).isEqualTo(9);
  }

  private static GetTaskRequest holdRequest(String trainer) {
    return GetTaskRequest.newBuilder().setTrainerId(trainer).setPass(0).setHoldMs(5000).build();
  }

  private GetTaskResponse getTaskReporting(String trainer, int pass, Task done) {
    return call()
        .getTask(
            GetTaskRequest.newBuilder()
                .setTrainerId(trainer)
                .setPass(pass)
                .addFinished(
                    TaskFinishedRequest.newBuilder()
                        .setTrainerId(trainer)
                        .setTaskId(done.getId())
                        .setEpoch(done.getEpoch()))
                .build());
  }

  @Test
  void taskFinished_unknownTask_isNotFound() {
    setDataset(dir + "/train-*.rio");
    assertError(() -> finish("t1", 99, 1), Status.Code.NOT_FOUND, ErrorReason.UNKNOWN_TASK, "99");
  }

  @Test
  void getTask_withoutTrainerId_isInvalidArgument() {
    setDataset(dir + "/train-*.rio");
    assertError(
        () -> getTask("", 0), Status.Code.INVALID_ARGUMENT, ErrorReason.BAD_ARGUMENT, "trainer_id");
  }

  @Test
  void everyCall_onANonLeader_isNotLeaderNamingTheLeader() {
    job.stopServing();
    job.setLeaderAddress(() -> Optional.of("10.0.0.7:9090"));
    assertError(
        () -> getTask("t1", 0),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NOT_LEADER,
        "10.0.0.7:9090");
    assertError(
        () -> setDataset(dir + "/train-*.rio"),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NOT_LEADER,
        "not the leader");
    assertError(
        () -> call().getStatus(GetStatusRequest.getDefaultInstance()),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NOT_LEADER,
        "not the leader");
    assertError(
        () -> finish("t1", 0, 1), Status.Code.FAILED_PRECONDITION, ErrorReason.NOT_LEADER, "");
  }

  private boolean finish(String trainer, long id, long epoch) {
    return call()
        .taskFinished(
            TaskFinishedRequest.newBuilder()
                .setTrainerId(trainer)
                .setTaskId(id)
                .setEpoch(epoch)
                .setRecords(10)
                .build())
        .getAccepted();
  }

  @Test
  void lossWindows_ofAcceptedReportsOnlyReachTheListener_andTasksAskForThem_hyperparametersKept() {
    List<List<LossWindow>> heard = new ArrayList<>();
    job.setLossTracking(500, heard::add, records -> {});
    call()
        .setDataset(
            SetDatasetRequest.newBuilder()
                .addGlobs(dir + "/train-*.rio")
                .setTrainerId("t1")
                .putHyperparameters("optimizer", Value.newBuilder().setStringValue("sgd").build())
                .build());
    // a later trainer's hyperparameters do not replace the first's
    call()
        .setDataset(
            SetDatasetRequest.newBuilder()
                .addGlobs(dir + "/train-*.rio")
                .setTrainerId("t2")
                .putHyperparameters("optimizer", Value.newBuilder().setStringValue("adam").build())
                .build());
    assertThat(job.hyperparameters().get("optimizer").getStringValue()).isEqualTo("sgd");

    GetTaskResponse a = getTask("t1", 0);
    assertThat(a.getLossEveryRecords()).isEqualTo(500);
    LossWindow w = LossWindow.newBuilder().setRecords(10).setLossSum(3.0).setBatches(1).build();
    TaskFinishedRequest report =
        TaskFinishedRequest.newBuilder()
            .setTrainerId("t1")
            .setTaskId(a.getTask().getId())
            .setEpoch(a.getTask().getEpoch())
            .setRecords(10)
            .addLoss(w)
            .build();
    assertThat(call().taskFinished(report).getAccepted()).isTrue();
    // the same report again is a duplicate: its windows are not counted twice
    assertThat(call().taskFinished(report).getAccepted()).isFalse();
    // reported within GetTask, as trainers do
    GetTaskResponse b = getTask("t1", 0);
    call()
        .getTask(
            GetTaskRequest.newBuilder()
                .setTrainerId("t1")
                .setPass(0)
                .addFinished(
                    report.toBuilder()
                        .setTaskId(b.getTask().getId())
                        .setEpoch(b.getTask().getEpoch())
                        .clearLoss()
                        .addLoss(w.toBuilder().setLossSum(1.0)))
                .build());
    assertThat(heard).containsExactly(List.of(w), List.of(w.toBuilder().setLossSum(1.0).build()));
  }

  @Test
  void setDataset_withHyperparametersThatAreNotShortScalars_isRefusedNamingTheLimit() {
    SetDatasetRequest.Builder req =
        SetDatasetRequest.newBuilder().addGlobs(dir + "/train-*.rio").setTrainerId("t1");
    Value longText = Value.newBuilder().setStringValue("x".repeat(300)).build();
    Value nested =
        Value.newBuilder().setStructValue(com.google.protobuf.Struct.getDefaultInstance()).build();
    for (Value refused : List.of(longText, nested)) {
      assertError(
          () -> call().setDataset(req.clone().putHyperparameters("model", refused).build()),
          Status.Code.INVALID_ARGUMENT,
          ErrorReason.BAD_ARGUMENT,
          "hyperparameter 'model' is refused: names of 1 to 256 characters with a number, a"
              + " boolean or a text");
    }
    // nothing was set: a good call still sets the dataset
    assertThat(call().setDataset(req.build()).getAlreadySet()).isFalse();
  }
}
