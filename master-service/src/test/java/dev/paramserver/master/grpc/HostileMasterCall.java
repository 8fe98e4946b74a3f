package dev.paramserver.master.grpc;

import com.google.protobuf.Message;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.GetTaskRequest;
import dev.paramserver.proto.v1.MasterGrpc.MasterBlockingStub;
import dev.paramserver.proto.v1.ReportEvaluationRequest;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.TaskFailedRequest;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.function.Function;

/**
 * One call of the master's fuzz test: a trainer's request, valid or mutated, built against the
 * fixture's dataset directory and the task the fixture holds; and whether the master must refuse it
 * whatever state the job is in.
 */
record HostileMasterCall(String what, boolean mustFail, Function<Target, Message> call) {

  /** What a call is built against: the stub, the dataset's directory and a dispatched task. */
  record Target(MasterBlockingStub stub, Path dir, long taskId, long epoch) {}

  @Override
  public String toString() {
    return what;
  }

  enum Mutation {
    SET_DATASET_VALID(false),
    SET_DATASET_OTHER(false),
    SET_DATASET_HOSTILE(true),
    GET_TASK_VALID(false),
    GET_TASK_EMPTY_TRAINER(true),
    GET_TASK_HOSTILE_NUMBERS(false),
    GET_TASK_UNKNOWN_FINISHED(true),
    GET_TASK_DUPLICATED_FINISHED(false),
    TASK_FINISHED_VALID(false),
    TASK_FINISHED_STALE(false),
    TASK_FINISHED_UNKNOWN_TASK(true),
    TASK_FAILED_VALID(false),
    TASK_FAILED_HOSTILE(false),
    TASK_FAILED_UNKNOWN_TASK(true),
    REPORT_EVALUATION_VALID(false),
    REPORT_EVALUATION_NON_FINITE(true),
    REPORT_EVALUATION_WRONG_PASS(true),
    REPORT_EVALUATION_EMPTY_TRAINER(true),
    GET_STATUS(false);

    final boolean mustFail;

    Mutation(boolean mustFail) {
      this.mustFail = mustFail;
    }

    HostileMasterCall with(long seed) {
      Random r = new Random(seed);
      long unknownTask = pick(r, List.of(-1L, 2L, 1L << 31, Long.MAX_VALUE, Long.MIN_VALUE));
      long hostileEpoch = pick(r, List.of(0L, -1L, Long.MAX_VALUE, 1L << 40));
      int hostileInt = pick(r, List.of(-1, Integer.MAX_VALUE, Integer.MIN_VALUE, 1 << 20));
      String trainer = r.nextBoolean() ? "t1" : "t2";
      String name = name() + "#" + seed;
      Function<Target, Message> call =
          switch (this) {
            case SET_DATASET_VALID -> t -> t.stub().setDataset(dataset(trainer, glob(t.dir())));
            case SET_DATASET_OTHER ->
                t -> t.stub().setDataset(dataset(trainer, t.dir() + "/train-0.rio"));
            case SET_DATASET_HOSTILE -> {
              int which = r.nextInt(11);
              yield t -> t.stub().setDataset(dataset(trainer, hostileGlobs(t.dir(), which)));
            }
            case GET_TASK_VALID -> t -> t.stub().getTask(getTask(trainer).build());
            case GET_TASK_EMPTY_TRAINER ->
                t -> t.stub().getTask(getTask(r.nextBoolean() ? "" : " \t").build());
            case GET_TASK_HOSTILE_NUMBERS -> {
              int field = r.nextInt(3);
              yield t -> {
                GetTaskRequest.Builder g = getTask(trainer);
                switch (field) {
                  case 0 -> g.setPass(hostileInt);
                  case 1 -> g.setHoldMs(hostileInt);
                  default -> g.setMaxTasks(hostileInt);
                }
                return t.stub().getTask(g.build());
              };
            }
            case GET_TASK_UNKNOWN_FINISHED ->
                t ->
                    t.stub()
                        .getTask(
                            getTask(trainer)
                                .addFinished(finished(trainer, t.taskId(), t.epoch()))
                                .addFinished(finished(trainer, unknownTask, t.epoch()))
                                .build());
            case GET_TASK_DUPLICATED_FINISHED ->
                t ->
                    t.stub()
                        .getTask(
                            getTask(trainer)
                                .addFinished(finished(trainer, t.taskId(), t.epoch()))
                                .addFinished(finished(trainer, t.taskId(), t.epoch()))
                                .build());
            case TASK_FINISHED_VALID ->
                t -> t.stub().taskFinished(finished(trainer, t.taskId(), t.epoch()));
            case TASK_FINISHED_STALE ->
                t -> t.stub().taskFinished(finished(trainer, t.taskId(), hostileEpoch));
            case TASK_FINISHED_UNKNOWN_TASK ->
                t -> t.stub().taskFinished(finished(trainer, unknownTask, t.epoch()));
            case TASK_FAILED_VALID ->
                t -> t.stub().taskFailed(failed(trainer, t.taskId(), t.epoch(), "oom", false));
            case TASK_FAILED_HOSTILE -> {
              String reason = pick(r, List.of("", "\u0000", "x".repeat(100_000), "é\n\t"));
              boolean handedBack = r.nextBoolean();
              yield t ->
                  t.stub()
                      .taskFailed(
                          failed(
                              r.nextBoolean() ? "" : trainer,
                              t.taskId(),
                              r.nextBoolean() ? t.epoch() : hostileEpoch,
                              reason,
                              handedBack));
            }
            case TASK_FAILED_UNKNOWN_TASK ->
                t -> t.stub().taskFailed(failed(trainer, unknownTask, t.epoch(), "x", false));
            case REPORT_EVALUATION_VALID ->
                t -> t.stub().reportEvaluation(evaluation(trainer, 0, 0.5, 0.75, 0.8));
            case REPORT_EVALUATION_NON_FINITE -> {
              double bad =
                  pick(r, List.of(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY));
              boolean onLoss = r.nextBoolean();
              yield t ->
                  t.stub()
                      .reportEvaluation(
                          evaluation(trainer, 0, onLoss ? bad : 0.5, onLoss ? 0.75 : bad, 0.8));
            }
            case REPORT_EVALUATION_WRONG_PASS ->
                t -> t.stub().reportEvaluation(evaluation(trainer, hostileInt, 0.5, 0.75, 0.8));
            case REPORT_EVALUATION_EMPTY_TRAINER ->
                t -> t.stub().reportEvaluation(evaluation("", 0, 0.5, 0.75, 0.8));
            case GET_STATUS -> t -> t.stub().getStatus(GetStatusRequest.getDefaultInstance());
          };
      return new HostileMasterCall(name, mustFail, call);
    }

    private static <T> T pick(Random r, List<T> from) {
      return from.get(r.nextInt(from.size()));
    }
  }

  static String glob(Path dir) {
    return dir + "/train-*.rio";
  }

  /** Globs no dataset can come from: none, empty, NUL, malformed, no match, not RecordIO, ... */
  static List<String> hostileGlobs(Path dir, int which) {
    return switch (which) {
      case 0 -> List.of();
      case 1 -> List.of("");
      case 2 -> List.of(dir + "/train-\u0000.rio");
      case 3 -> List.of(dir + "/train-[.rio");
      case 4 -> List.of(dir + "/missing-*.rio");
      case 5 -> List.of(dir + "/notes.txt");
      case 6 -> List.of(dir.toString());
      case 7 -> List.of(dir + "/{train-0.rio,");
      case 8 -> List.of("s3://");
      case 9 -> List.of("s3://Bad_Bucket!/x-*.rio");
      default -> List.of(dir + "/" + "x".repeat(5000));
    };
  }

  static SetDatasetRequest dataset(String trainer, String glob) {
    return dataset(trainer, List.of(glob));
  }

  static SetDatasetRequest dataset(String trainer, List<String> globs) {
    return SetDatasetRequest.newBuilder().setTrainerId(trainer).addAllGlobs(globs).build();
  }

  static GetTaskRequest.Builder getTask(String trainer) {
    return GetTaskRequest.newBuilder().setTrainerId(trainer).setPass(0).setMaxTasks(1);
  }

  static TaskFinishedRequest finished(String trainer, long taskId, long epoch) {
    return TaskFinishedRequest.newBuilder()
        .setTrainerId(trainer)
        .setTaskId(taskId)
        .setEpoch(epoch)
        .setRecords(10)
        .build();
  }

  static TaskFailedRequest failed(
      String trainer, long taskId, long epoch, String reason, boolean handedBack) {
    return TaskFailedRequest.newBuilder()
        .setTrainerId(trainer)
        .setTaskId(taskId)
        .setEpoch(epoch)
        .setReason(reason)
        .setHandedBack(handedBack)
        .build();
  }

  static ReportEvaluationRequest evaluation(
      String trainer, int pass, double loss, double accuracy, double auc) {
    return ReportEvaluationRequest.newBuilder()
        .setTrainerId(trainer)
        .setPass(pass)
        .setLoss(loss)
        .setAccuracy(accuracy)
        .setSamples(100)
        .setAuc(auc)
        .build();
  }
}
