package dev.paramserver.trainer.testing;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.Chunk;
import dev.paramserver.proto.v1.GetTaskRequest;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.proto.v1.ReportEvaluationRequest;
import dev.paramserver.proto.v1.ReportEvaluationResponse;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.proto.v1.TaskFailedRequest;
import dev.paramserver.proto.v1.TaskFailedResponse;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import dev.paramserver.proto.v1.TaskFinishedResponse;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A master for in-process tests: hands out the tasks it was given (one pass), then PASS_FINISHED
 * once, then JOB_FINISHED; records every report; answers NOT_LEADER for a number of calls on
 * demand.
 */
public final class FakeMaster extends MasterGrpc.MasterImplBase implements AutoCloseable {
  private final String name = "fake-master-" + UUID.randomUUID();
  private final Deque<Task> todo = new ArrayDeque<>();
  private final AtomicInteger notLeaderCalls = new AtomicInteger();
  private final AtomicInteger calls = new AtomicInteger();
  private boolean passFinishedSent;
  private int tasksGiven;
  public final Queue<SetDatasetRequest> datasets = new ConcurrentLinkedQueue<>();
  public final Queue<TaskFinishedRequest> finished = new ConcurrentLinkedQueue<>();
  public final Queue<TaskFailedRequest> failed = new ConcurrentLinkedQueue<>();
  public final Queue<ReportEvaluationRequest> evaluations = new ConcurrentLinkedQueue<>();
  private volatile Runnable onNotLeader = () -> {};

  /** What every task handed out asks for (GetTaskResponse.loss_every_records); 0 by default. */
  public volatile long lossEveryRecords;

  private final InProcessGrpc grpc = new InProcessGrpc();

  public FakeMaster() throws IOException {
    grpc.startServer(name, b -> b.addService(this));
  }

  public String address() {
    return name;
  }

  /** Adds a task of pass 0 made of these chunks. */
  public synchronized Task addTask(long id, List<ChunkInfo> chunks) {
    Task.Builder t = Task.newBuilder().setId(id).setEpoch(1).setPass(0);
    for (ChunkInfo c : chunks) {
      t.addChunks(
          Chunk.newBuilder()
              .setPath(c.file().toString())
              .setOffset(c.offset())
              .setLength(c.length())
              .setRecords(c.records()));
    }
    Task task = t.build();
    todo.add(task);
    tasksGiven++;
    return task;
  }

  /** Answers the next {@code n} calls with NOT_LEADER, running {@code then} after the first. */
  public void notLeaderFor(int n, Runnable then) {
    onNotLeader = then;
    notLeaderCalls.set(n);
  }

  /** Calls answered (including refused ones). */
  public int calls() {
    return calls.get();
  }

  private boolean refused(StreamObserver<?> out) {
    calls.incrementAndGet();
    if (notLeaderCalls.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      out.onError(RpcErrors.toStatus(ErrorReason.NOT_LEADER, "fake master is not the leader"));
      Runnable r = onNotLeader;
      onNotLeader = () -> {};
      r.run();
      return true;
    }
    return false;
  }

  private static <T> void reply(StreamObserver<T> out, T value) {
    out.onNext(value);
    out.onCompleted();
  }

  @Override
  public void setDataset(SetDatasetRequest req, StreamObserver<SetDatasetResponse> out) {
    if (!refused(out)) {
      datasets.add(req);
      reply(out, SetDatasetResponse.newBuilder().setPasses(1).build());
    }
  }

  @Override
  public synchronized void getTask(GetTaskRequest req, StreamObserver<GetTaskResponse> out) {
    if (refused(out)) {
      return;
    }
    // tasks reported finished in the request count before the next one is handed out
    finished.addAll(req.getFinishedList());
    GetTaskResponse.Builder resp = GetTaskResponse.newBuilder().setTotalPasses(1);
    Task next = todo.poll();
    if (next != null) {
      resp.setOutcome(GetTaskResponse.Outcome.TASK)
          .setTask(next)
          .setLossEveryRecords(lossEveryRecords);
    } else if (finished.size() + failed.size() < tasksGiven) {
      resp.setOutcome(GetTaskResponse.Outcome.WAIT).setRetryAfterMs(10);
    } else if (!passFinishedSent) {
      passFinishedSent = true;
      resp.setOutcome(GetTaskResponse.Outcome.PASS_FINISHED).setCurrentPass(1);
    } else {
      resp.setOutcome(GetTaskResponse.Outcome.JOB_FINISHED);
    }
    reply(out, resp.build());
  }

  @Override
  public void taskFinished(TaskFinishedRequest req, StreamObserver<TaskFinishedResponse> out) {
    if (!refused(out)) {
      finished.add(req);
      reply(out, TaskFinishedResponse.newBuilder().setAccepted(true).build());
    }
  }

  @Override
  public void taskFailed(TaskFailedRequest req, StreamObserver<TaskFailedResponse> out) {
    if (!refused(out)) {
      failed.add(req);
      reply(out, TaskFailedResponse.newBuilder().setAccepted(true).build());
    }
  }

  @Override
  public void reportEvaluation(
      ReportEvaluationRequest req, StreamObserver<ReportEvaluationResponse> out) {
    if (!refused(out)) {
      evaluations.add(req);
      reply(out, ReportEvaluationResponse.getDefaultInstance());
    }
  }

  @Override
  public void close() throws InterruptedException {
    grpc.close();
  }
}
