package dev.paramserver.master.task;

import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskTable;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Converts a {@link TaskQueue} to and from its persistent form, {@link MasterSnapshot}. */
final class TaskQueueSnapshots {
  private TaskQueueSnapshots() {}

  static MasterSnapshot toSnapshot(TaskQueue q) {
    int n = q.tasks;
    TaskTable.Builder t = TaskTable.newBuilder();
    List<Integer> states = new ArrayList<>(n);
    List<Long> epochs = new ArrayList<>(n);
    List<Integer> failures = new ArrayList<>(n);
    List<Long> deadlines = new ArrayList<>(n);
    List<Integer> finishes = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      states.add((int) q.states[i]);
      epochs.add(q.epochs[i]);
      failures.add(q.failures[i]);
      deadlines.add(q.deadlines[i]);
      finishes.add(q.finishes[i]);
    }
    t.addAllStatesValue(states)
        .addAllEpochs(epochs)
        .addAllFailures(failures)
        .addAllDeadlinesMs(deadlines)
        .addAllFinishes(finishes)
        .addAllHolders(Arrays.asList(q.holders));
    for (int id : q.todo.toArray()) {
      t.addTodoOrder(id);
    }
    return MasterSnapshot.newBuilder()
        .setState(q.state)
        .setPass(q.pass)
        .setTotalPasses(q.totalPasses)
        .setFailureReason(q.failureReason)
        .setTasks(t)
        .addAllHistory(q.passStatuses())
        .setJobStartedMs(q.jobStartedMs)
        .build();
  }

  static TaskQueue fromSnapshot(
      MasterSnapshot s, long[] taskRecords, int maxFailures, Clock clock) {
    TaskTable t = s.getTasks();
    int n = taskRecords.length;
    if (t.getStatesCount() != n
        || t.getEpochsCount() != n
        || t.getFailuresCount() != n
        || t.getDeadlinesMsCount() != n
        || t.getFinishesCount() != n
        || t.getHoldersCount() != n) {
      throw new IllegalStateException(
          "the master snapshot holds "
              + t.getStatesCount()
              + " tasks but the dataset has "
              + n
              + ": the snapshot does not belong to this dataset");
    }
    if (s.getState() == JobState.WAITING_FOR_DATASET
        || s.getState() == JobState.JOB_STATE_UNSPECIFIED
        || s.getHistoryCount() == 0) {
      throw new IllegalStateException(
          "the master snapshot has state " + s.getState() + " and no pass history");
    }
    TaskQueue q = new TaskQueue(taskRecords, s.getTotalPasses(), maxFailures, clock, false);
    q.state = s.getState();
    q.pass = s.getPass();
    q.failureReason = s.getFailureReason();
    q.jobStartedMs = s.getJobStartedMs();
    q.states = new byte[n];
    q.epochs = new long[n];
    q.failures = new int[n];
    q.deadlines = new long[n];
    q.finishes = new int[n];
    q.holders = new String[n];
    q.dispatchedMs = new long[n]; // unknown after a restore: durations of these tasks are not used
    for (int i = 0; i < n; i++) {
      byte st = (byte) t.getStatesValue(i);
      q.states[i] = st;
      q.epochs[i] = t.getEpochs(i);
      q.failures[i] = t.getFailures(i);
      q.deadlines[i] = t.getDeadlinesMs(i);
      q.finishes[i] = t.getFinishes(i);
      q.holders[i] = t.getHolders(i);
      switch (st) {
        case TaskQueue.PENDING -> q.pending++;
        case TaskQueue.DONE -> q.done++;
        case TaskQueue.FAILED -> q.failed++;
        case TaskQueue.TODO -> {}
        default ->
            throw new IllegalStateException(
                "the master snapshot has task " + i + " in unknown state " + st);
      }
    }
    q.todo = new IntRing(n);
    for (int id : t.getTodoOrderList()) {
      if (id < 0 || id >= n || q.states[id] != TaskQueue.TODO) {
        throw new IllegalStateException(
            "the master snapshot lists task " + id + " in todo but its state disagrees");
      }
      q.todo.addLast(id);
    }
    for (PassStatus p : s.getHistoryList()) {
      q.history.add(PassLedger.fromProto(p));
    }
    return q;
  }
}
