package dev.paramserver.master.task;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import dev.paramserver.proto.v1.TaskTable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Copies a {@link TaskQueue}: to and from its persistent form, {@link MasterSnapshot}, and in
 * memory ({@link #copy}, the copy a change is made on).
 */
final class TaskQueueSnapshots {
  private TaskQueueSnapshots() {}

  static MasterSnapshot toSnapshot(TaskQueue q) {
    int n = q.tasks;
    TaskTable.Builder t = TaskTable.newBuilder();
    List<Integer> states = new ArrayList<>(n);
    List<Long> epochs = new ArrayList<>(n);
    List<Long> passStarts = new ArrayList<>(n);
    List<Integer> failures = new ArrayList<>(n);
    List<Long> deadlines = new ArrayList<>(n);
    List<Integer> finishes = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      states.add((int) q.states[i]);
      epochs.add(q.epochs[i]);
      passStarts.add(q.passStartEpochs[i]);
      failures.add(q.failures[i]);
      deadlines.add(q.deadlines[i]);
      finishes.add(q.finishes[i]);
    }
    t.addAllStatesValue(states)
        .addAllEpochs(epochs)
        .addAllFailures(failures)
        .addAllDeadlinesMs(deadlines)
        .addAllFinishes(finishes)
        .addAllHolders(Arrays.asList(q.holders))
        .addAllPassStartEpochs(passStarts);
    if (anyRequest(q)) {
      for (int i = 0; i < n; i++) {
        t.addRequests(request(q, i));
      }
    }
    for (int id : q.todo.toArray()) {
      t.addTodoOrder(id);
    }
    for (int id : aheadTasks(q)) {
      t.addNextPassTasks(id);
    }
    for (int id : q.nextTodo.toArray()) {
      t.addNextTodoOrder(id);
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

  /**
   * The serialized {@link MasterSnapshot} of the queue, written field by field from the arrays: the
   * same bytes a parser reads as {@link #toSnapshot}, without boxing 100k values per change.
   */
  static byte[] encode(TaskQueue q) {
    MasterSnapshot head =
        MasterSnapshot.newBuilder()
            .setState(q.state)
            .setPass(q.pass)
            .setTotalPasses(q.totalPasses)
            .setFailureReason(q.failureReason)
            .addAllHistory(q.passStatuses())
            .setJobStartedMs(q.jobStartedMs)
            .build();
    int n = q.tasks;
    int[] todo = q.todo.toArray();
    int statesSize = 0;
    int epochsSize = 0;
    int failuresSize = 0;
    int deadlinesSize = 0;
    int finishesSize = 0;
    int todoSize = 0;
    int holdersSize = 0;
    int passStartsSize = 0;
    byte[][] holders = new byte[n][];
    for (int i = 0; i < n; i++) {
      statesSize += CodedOutputStream.computeInt32SizeNoTag(q.states[i]);
      epochsSize += CodedOutputStream.computeUInt64SizeNoTag(q.epochs[i]);
      passStartsSize += CodedOutputStream.computeUInt64SizeNoTag(q.passStartEpochs[i]);
      failuresSize += CodedOutputStream.computeUInt32SizeNoTag(q.failures[i]);
      deadlinesSize += CodedOutputStream.computeInt64SizeNoTag(q.deadlines[i]);
      finishesSize += CodedOutputStream.computeUInt32SizeNoTag(q.finishes[i]);
      holders[i] = q.holders[i].getBytes(StandardCharsets.UTF_8);
      holdersSize +=
          1 + CodedOutputStream.computeUInt32SizeNoTag(holders[i].length) + holders[i].length;
    }
    for (int id : todo) {
      todoSize += CodedOutputStream.computeUInt32SizeNoTag(id);
    }
    // field 11, written only when a pending task has a request id (as toSnapshot does)
    byte[][] requests = anyRequest(q) ? new byte[n][] : new byte[0][];
    int requestsSize = 0;
    for (int i = 0; i < requests.length; i++) {
      requests[i] = request(q, i).getBytes(StandardCharsets.UTF_8);
      requestsSize +=
          1 + CodedOutputStream.computeUInt32SizeNoTag(requests[i].length) + requests[i].length;
    }
    int[] ahead = aheadTasks(q);
    int[] nextTodo = q.nextTodo.toArray();
    int aheadSize = 0;
    int nextTodoSize = 0;
    for (int id : ahead) {
      aheadSize += CodedOutputStream.computeUInt32SizeNoTag(id);
    }
    for (int id : nextTodo) {
      nextTodoSize += CodedOutputStream.computeUInt32SizeNoTag(id);
    }
    int tableSize =
        packedSize(1, statesSize)
            + packedSize(2, epochsSize)
            + packedSize(3, failuresSize)
            + packedSize(4, deadlinesSize)
            + packedSize(5, finishesSize)
            + packedSize(6, todoSize)
            + holdersSize
            + packedSize(8, passStartsSize)
            + packedSize(9, aheadSize)
            + packedSize(10, nextTodoSize)
            + requestsSize;
    int headSize = head.getSerializedSize();
    byte[] out =
        new byte
            [headSize
                + CodedOutputStream.computeTagSize(MasterSnapshot.TASKS_FIELD_NUMBER)
                + CodedOutputStream.computeUInt32SizeNoTag(tableSize)
                + tableSize];
    CodedOutputStream c = CodedOutputStream.newInstance(out);
    try {
      head.writeTo(c);
      c.writeTag(MasterSnapshot.TASKS_FIELD_NUMBER, WireFormat.WIRETYPE_LENGTH_DELIMITED);
      c.writeUInt32NoTag(tableSize);
      packedHeader(c, 1, statesSize, n);
      for (int i = 0; i < n; i++) {
        c.writeInt32NoTag(q.states[i]);
      }
      packedHeader(c, 2, epochsSize, n);
      for (int i = 0; i < n; i++) {
        c.writeUInt64NoTag(q.epochs[i]);
      }
      packedHeader(c, 3, failuresSize, n);
      for (int i = 0; i < n; i++) {
        c.writeUInt32NoTag(q.failures[i]);
      }
      packedHeader(c, 4, deadlinesSize, n);
      for (int i = 0; i < n; i++) {
        c.writeInt64NoTag(q.deadlines[i]);
      }
      packedHeader(c, 5, finishesSize, n);
      for (int i = 0; i < n; i++) {
        c.writeUInt32NoTag(q.finishes[i]);
      }
      packedHeader(c, 6, todoSize, todo.length);
      for (int id : todo) {
        c.writeUInt32NoTag(id);
      }
      for (int i = 0; i < n; i++) {
        c.writeTag(7, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        c.writeUInt32NoTag(holders[i].length);
        c.writeRawBytes(holders[i]);
      }
      packedHeader(c, 8, passStartsSize, n);
      for (int i = 0; i < n; i++) {
        c.writeUInt64NoTag(q.passStartEpochs[i]);
      }
      packedUInt32s(c, 9, aheadSize, ahead);
      packedUInt32s(c, 10, nextTodoSize, nextTodo);
      for (byte[] r : requests) {
        c.writeTag(11, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        c.writeUInt32NoTag(r.length);
        c.writeRawBytes(r);
      }
      c.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("encoding the master snapshot failed", e);
    }
    return out;
  }

  /** Whether a pending task went out under a GetTask request id (field 11 is written then). */
  private static boolean anyRequest(TaskQueue q) {
    for (int i = 0; i < q.tasks; i++) {
      if (q.states[i] == TaskQueue.PENDING && !request(q, i).isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /** The request id of pending task {@code i}, else "" (a stale id of a task no longer pending). */
  private static String request(TaskQueue q, int i) {
    String r = q.requests[i];
    return q.states[i] == TaskQueue.PENDING && r != null ? r : "";
  }

  /** The ids of the tasks leased ahead (whose state is for the next pass). */
  private static int[] aheadTasks(TaskQueue q) {
    int count = 0;
    for (boolean a : q.ahead) {
      count += a ? 1 : 0;
    }
    int[] out = new int[count];
    for (int i = 0, k = 0; i < q.tasks; i++) {
      if (q.ahead[i]) {
        out[k++] = i;
      }
    }
    return out;
  }

  private static void packedUInt32s(CodedOutputStream c, int field, int payload, int[] values)
      throws IOException {
    packedHeader(c, field, payload, values.length);
    for (int v : values) {
      c.writeUInt32NoTag(v);
    }
  }

  private static int packedSize(int field, int payload) {
    return payload == 0
        ? 0
        : CodedOutputStream.computeTagSize(field)
            + CodedOutputStream.computeUInt32SizeNoTag(payload)
            + payload;
  }

  private static void packedHeader(CodedOutputStream c, int field, int payload, int count)
      throws IOException {
    if (count > 0) {
      c.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
      c.writeUInt32NoTag(payload);
    }
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
    q.passStartEpochs = new long[n];
    q.failures = new int[n];
    q.deadlines = new long[n];
    q.finishes = new int[n];
    q.holders = new String[n];
    q.requests = new String[n];
    q.dispatchedMs = new long[n]; // unknown after a restore: durations of these tasks are not used
    q.ahead = new boolean[n];
    for (int id : t.getNextPassTasksList()) {
      if (id < 0 || id >= n) {
        throw new IllegalStateException(
            "the master snapshot leases task " + id + " ahead but the dataset has " + n + " tasks");
      }
      q.ahead[id] = true;
    }
    for (int i = 0; i < n; i++) {
      byte st = (byte) t.getStatesValue(i);
      q.states[i] = st;
      q.epochs[i] = t.getEpochs(i);
      // snapshots written before this field existed: treat every epoch as this pass's
      q.passStartEpochs[i] = t.getPassStartEpochsCount() == n ? t.getPassStartEpochs(i) : 0;
      q.failures[i] = t.getFailures(i);
      q.deadlines[i] = t.getDeadlinesMs(i);
      q.finishes[i] = t.getFinishes(i);
      q.holders[i] = t.getHolders(i);
      // empty when no pending task had a request id (and in snapshots from before the field)
      q.requests[i] = t.getRequestsCount() == n ? t.getRequests(i) : "";
      boolean ahead = q.ahead[i];
      switch (st) {
        case TaskQueue.PENDING -> {
          q.pending++;
          q.aheadPending += ahead ? 1 : 0;
        }
        case TaskQueue.DONE -> {
          if (ahead) {
            q.aheadDone++;
          } else {
            q.done++;
          }
        }
        case TaskQueue.FAILED -> {
          if (ahead) {
            q.aheadFailed++;
          } else {
            q.failed++;
          }
        }
        case TaskQueue.TODO -> {}
        default ->
            throw new IllegalStateException(
                "the master snapshot has task " + i + " in unknown state " + st);
      }
    }
    q.todo = ring(t.getTodoOrderList(), q, false);
    q.nextTodo = ring(t.getNextTodoOrderList(), q, true);
    for (PassStatus p : s.getHistoryList()) {
      q.history.add(PassLedger.fromProto(p));
    }
    if (t.getNextPassTasksCount() > 0 && !q.aheadOpen()) {
      throw new IllegalStateException(
          "the master snapshot leases tasks ahead but has no ledger for pass " + (q.pass + 1));
    }
    if (q.aheadOpen() && q.state == JobState.RUNNING) {
      // the tasks that moved ahead no longer show what they were in the current pass: its counts
      // are those its ledger was saved with
      TaskCounts current = s.getHistory(q.pass).getTasks();
      q.done = current.getDone();
      q.failed = current.getFailed();
    }
    return q;
  }

  /** A todo queue from its order, each task checked to be todo in that pass. */
  private static IntRing ring(List<Integer> order, TaskQueue q, boolean ahead) {
    IntRing r = new IntRing(q.tasks);
    for (int id : order) {
      if (id < 0 || id >= q.tasks || q.states[id] != TaskQueue.TODO || q.ahead[id] != ahead) {
        throw new IllegalStateException(
            "the master snapshot lists task "
                + id
                + " in the "
                + (ahead ? "next pass's " : "")
                + "todo but its state disagrees");
      }
      r.addLast(id);
    }
    return r;
  }

  /** A deep copy of {@code q}, to change and swap in after the change was persisted. */
  static TaskQueue copy(TaskQueue q) {
    TaskQueue c = new TaskQueue(q.taskRecords, q.totalPasses, q.maxFailures, q.clock, false);
    c.state = q.state;
    c.pass = q.pass;
    c.failureReason = q.failureReason;
    c.lastFailure = q.lastFailure;
    c.jobStartedMs = q.jobStartedMs;
    c.version = q.version;
    c.states = q.states.clone();
    c.epochs = q.epochs.clone();
    c.passStartEpochs = q.passStartEpochs.clone();
    c.failures = q.failures.clone();
    c.deadlines = q.deadlines.clone();
    c.finishes = q.finishes.clone();
    c.holders = q.holders.clone();
    c.requests = q.requests.clone();
    c.dispatchedMs = q.dispatchedMs.clone();
    c.todo = q.todo.copy();
    c.ahead = q.ahead.clone();
    c.nextTodo = q.nextTodo.copy();
    c.pending = q.pending;
    c.done = q.done;
    c.failed = q.failed;
    c.aheadPending = q.aheadPending;
    c.aheadDone = q.aheadDone;
    c.aheadFailed = q.aheadFailed;
    c.history = new ArrayList<>(q.history.size());
    for (PassLedger l : q.history) {
      c.history.add(l.copy());
    }
    return c;
  }
}
