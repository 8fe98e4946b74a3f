package dev.paramserver.master.grpc;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.GetTaskRequest;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.proto.v1.ReportEvaluationRequest;
import dev.paramserver.proto.v1.ReportEvaluationResponse;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.TaskFailedRequest;
import dev.paramserver.proto.v1.TaskFailedResponse;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import dev.paramserver.proto.v1.TaskFinishedResponse;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import org.springframework.grpc.server.service.GrpcService;

/**
 * The Master gRPC service: a thin adapter over {@link MasterJob}. Domain errors are thrown as
 * {@link ServiceException} and mapped to statuses by the ErrorMappingInterceptor.
 */
@GrpcService
public final class MasterGrpcService extends MasterGrpc.MasterImplBase {
  private final MasterJob job;

  public MasterGrpcService(MasterJob job) {
    this.job = job;
  }

  @Override
  public void setDataset(SetDatasetRequest req, StreamObserver<SetDatasetResponse> out) {
    reply(out, job.setDataset(req.getGlobsList(), req.getTrainerId(), req.getHyperparametersMap()));
  }

  @Override
  public void getTask(GetTaskRequest req, StreamObserver<GetTaskResponse> out) {
    List<MasterJob.Finished> finished = new ArrayList<>(req.getFinishedCount());
    for (TaskFinishedRequest f : req.getFinishedList()) {
      finished.add(finished(f));
    }
    reply(
        out,
        job.getTask(
            trainer(req.getTrainerId()),
            req.getPass(),
            finished,
            req.getHoldMs(),
            req.getMaxTasks(),
            requestId(req.getRequestId())));
  }

  @Override
  public void taskFinished(TaskFinishedRequest req, StreamObserver<TaskFinishedResponse> out) {
    boolean accepted = job.taskFinished(req.getTrainerId(), finished(req));
    reply(out, TaskFinishedResponse.newBuilder().setAccepted(accepted).build());
  }

  @Override
  public void taskFailed(TaskFailedRequest req, StreamObserver<TaskFailedResponse> out) {
    boolean accepted =
        job.taskFailed(
            req.getTrainerId(),
            req.getTaskId(),
            req.getEpoch(),
            req.getReason(),
            req.getHandedBack());
    reply(out, TaskFailedResponse.newBuilder().setAccepted(accepted).build());
  }

  @Override
  public void reportEvaluation(
      ReportEvaluationRequest req, StreamObserver<ReportEvaluationResponse> out) {
    job.reportEvaluation(
        trainer(req.getTrainerId()), req.getPass(), req.getLoss(), req.getAccuracy(), req.getAuc());
    reply(out, ReportEvaluationResponse.getDefaultInstance());
  }

  @Override
  public void getStatus(GetStatusRequest req, StreamObserver<JobStatus> out) {
    reply(out, job.status());
  }

  private static MasterJob.Finished finished(TaskFinishedRequest f) {
    return new MasterJob.Finished(f.getTaskId(), f.getEpoch(), f.getLossList());
  }

  private static String trainer(String id) {
    if (id == null || id.isBlank()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT, "trainer_id is empty: every trainer sends its id");
    }
    return id;
  }

  /** The longest GetTask request_id taken (it is kept with each task it went out with). */
  static final int MAX_REQUEST_ID = 128;

  private static String requestId(String id) {
    if (id.length() > MAX_REQUEST_ID) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "request_id is "
              + id.length()
              + " characters long; at most "
              + MAX_REQUEST_ID
              + " are taken (a UUID is 36)");
    }
    return id;
  }

  private static <T> void reply(StreamObserver<T> out, T value) {
    out.onNext(value);
    out.onCompleted();
  }
}
