package dev.paramserver.trainer.master;

import com.google.protobuf.Value;
import dev.paramserver.proto.v1.GetTaskRequest;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.LossWindow;
import dev.paramserver.proto.v1.ReportEvaluationRequest;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.proto.v1.TaskFailedRequest;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The calls a trainer makes to the master, as requests built from this trainer's id. Every call but
 * {@link #handBack} retries through {@link MasterClient} until it succeeds or the trainer stops.
 */
public final class MasterReports {
  private final MasterClient master;
  private final String trainerId;

  public MasterReports(MasterClient master, String trainerId) {
    this.master = master;
    this.trainerId = trainerId;
  }

  public String trainerId() {
    return trainerId;
  }

  /** Tells the master which files to train on (a no-op if another trainer did). */
  public SetDatasetResponse setDataset(List<String> globs) {
    return setDataset(globs, Map.of());
  }

  /**
   * Tells the master which files to train on, with the job's hyperparameters for its run tracking
   * (a no-op if another trainer did).
   */
  public SetDatasetResponse setDataset(List<String> globs, Map<String, Value> hyperparameters) {
    SetDatasetRequest req =
        SetDatasetRequest.newBuilder()
            .addAllGlobs(globs)
            .setTrainerId(trainerId)
            .putAllHyperparameters(hyperparameters)
            .build();
    return master.call("SetDataset", stub -> stub.setDataset(req));
  }

  /** Asks for a task of {@code pass}. */
  public GetTaskResponse getTask(int pass) {
    return getTask(pass, List.of(), 0, 1);
  }

  /**
   * Reports the tasks {@code finished} and asks for a task of {@code pass}, in one call.
   *
   * @param holdMs how long the master may hold a WAIT answer for a change (0: answer at once)
   * @param maxTasks the most tasks to take (the master may give fewer)
   */
  public GetTaskResponse getTask(
      int pass, List<TaskFinishedRequest> finished, int holdMs, int maxTasks) {
    GetTaskRequest req =
        GetTaskRequest.newBuilder()
            .setTrainerId(trainerId)
            .setPass(pass)
            .addAllFinished(finished)
            .setHoldMs(holdMs)
            .setMaxTasks(maxTasks)
            // the same id on every retry of this request: a master that saved an answer the
            // trainer never got (it stopped leading, another took over) gives the same tasks again
            .setRequestId(UUID.randomUUID().toString())
            .build();
    return master.call("GetTask", stub -> stub.getTask(req));
  }

  /** The report of {@code task} trained on {@code records} records. */
  public TaskFinishedRequest finishedReport(Task task, long records) {
    return finishedReport(task, records, List.of());
  }

  /**
   * The report of {@code task} trained on {@code records} records, with its training {@code loss}
   * in windows.
   */
  public TaskFinishedRequest finishedReport(Task task, long records, List<LossWindow> loss) {
    return TaskFinishedRequest.newBuilder()
        .setTrainerId(trainerId)
        .setTaskId(task.getId())
        .setEpoch(task.getEpoch())
        .setRecords(records)
        .addAllLoss(loss)
        .build();
  }

  public void finished(Task task, long records) {
    finished(task, records, List.of());
  }

  /** Reports {@code task} trained, with its training {@code loss} in windows. */
  public void finished(Task task, long records, List<LossWindow> loss) {
    TaskFinishedRequest req = finishedReport(task, records, loss);
    master.call("TaskFinished", stub -> stub.taskFinished(req));
  }

  /**
   * Reports a task trained with one attempt, made even though the trainer stops.
   *
   * @return whether the master took the report
   */
  public boolean finishedOnce(Task task, long records) {
    return finishedOnce(task, records, List.of());
  }

  /** As {@link #finishedOnce(Task, long)}, with the task's training {@code loss} in windows. */
  public boolean finishedOnce(Task task, long records, List<LossWindow> loss) {
    TaskFinishedRequest req = finishedReport(task, records, loss);
    return master.callOnce("TaskFinished", stub -> stub.taskFinished(req));
  }

  /** Reports a task that cannot be trained (its records cannot be read). */
  public void failed(Task task, String reason) {
    master.call("TaskFailed", stub -> stub.taskFailed(failure(task, reason, false)));
  }

  /**
   * Hands a task back as this trainer stops: one attempt, made even though the trainer stops (if it
   * fails, the master re-dispatches the task when its timeout ends).
   *
   * @return whether the master took it back
   */
  public boolean handBack(Task task) {
    String reason = "trainer " + trainerId + " is shutting down";
    return master.callOnce("TaskFailed", stub -> stub.taskFailed(failure(task, reason, true)));
  }

  private TaskFailedRequest failure(Task task, String reason, boolean handBack) {
    return TaskFailedRequest.newBuilder()
        .setTrainerId(trainerId)
        .setTaskId(task.getId())
        .setEpoch(task.getEpoch())
        .setReason(reason == null ? "" : reason)
        .setHandedBack(handBack)
        .build();
  }

  /** Reports the evaluation at the end of a pass. */
  public void evaluation(int pass, double loss, double accuracy, long samples, double auc) {
    master.call(
        "ReportEvaluation",
        stub ->
            stub.reportEvaluation(
                ReportEvaluationRequest.newBuilder()
                    .setTrainerId(trainerId)
                    .setPass(pass)
                    .setLoss(loss)
                    .setAccuracy(accuracy)
                    .setSamples(samples)
                    .setAuc(Double.isNaN(auc) ? 0 : auc)
                    .build()));
  }
}
