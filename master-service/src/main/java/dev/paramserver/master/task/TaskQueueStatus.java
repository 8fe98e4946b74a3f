package dev.paramserver.master.task;

import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import java.util.ArrayList;
import java.util.List;

/** The status a {@link TaskQueue} reports: the job's state and every pass's accounting. */
final class TaskQueueStatus {
  private TaskQueueStatus() {}

  static JobStatus status(TaskQueue q) {
    TaskCounts live = q.counts();
    JobStatus.Builder b =
        JobStatus.newBuilder()
            .setState(q.state)
            .setPass(q.pass)
            .setTotalPasses(q.totalPasses)
            .setFailureReason(q.failureReason)
            // once the job ended, the counts of its last pass as they were when it ended
            .setTasks(q.state == JobState.RUNNING ? live : q.current().toProto(live).getTasks());
    for (PassLedger l : q.history) {
      b.addPasses(l.toProto(liveCounts(q, l, live)));
    }
    return b.build();
  }

  /** The pass statuses (also the per-pass history kept in snapshots). */
  static List<PassStatus> passStatuses(TaskQueue q) {
    TaskCounts live = q.counts();
    List<PassStatus> out = new ArrayList<>(q.history.size());
    for (PassLedger l : q.history) {
      out.add(l.toProto(liveCounts(q, l, live)));
    }
    return out;
  }

  /** The counts of a running pass: the current one's, or those of the pass leased ahead. */
  private static TaskCounts liveCounts(TaskQueue q, PassLedger l, TaskCounts current) {
    return l.pass > q.pass ? q.aheadCounts() : current;
  }

  /** The current pass's counts (the tasks leased ahead are not the current pass's). */
  static TaskCounts counts(TaskQueue q) {
    return TaskCounts.newBuilder()
        .setTodo(q.todo.size())
        .setPending(q.pending - q.aheadPending)
        .setDone(q.done)
        .setFailed(q.failed)
        .build();
  }

  /**
   * The counts of the pass leased ahead: the tasks still pending in the current pass count as its
   * todo.
   */
  static TaskCounts aheadCounts(TaskQueue q) {
    return TaskCounts.newBuilder()
        .setTodo(q.tasks - q.aheadPending - q.aheadDone - q.aheadFailed)
        .setPending(q.aheadPending)
        .setDone(q.aheadDone)
        .setFailed(q.aheadFailed)
        .build();
  }
}
