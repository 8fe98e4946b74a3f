package dev.paramserver.master.task;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

/**
 * The task queues of a job (docs/design.md §3): every task of the current pass is in exactly one of
 * todo, pending (with a deadline, a dispatch epoch and a holder), done or failed.
 *
 * <p>Rules: a task is handed out from the head of todo with its epoch increased; a report carries
 * (task id, epoch) and a stale one is ignored; a failed or timed-out task goes back to the tail of
 * todo until it has failed {@code maxFailures} times in the pass, then to failed; a task handed
 * back goes back to todo without counting as a failure. After every change the queue checks for the
 * end of the pass (no task todo or pending): if no task of the pass was done the job fails, after
 * the last pass it is finished, else the next pass re-queues every task with its failure count
 * reset. Epochs grow across passes so a report from an earlier pass is always stale.
 *
 * <p>Leasing ahead (for asynchronous trainers, {@link #next(String, int, Duration, boolean)}): when
 * the current pass has no task todo but some pending with other trainers, the tasks it has already
 * done (or failed) start the next pass early: they move to the next pass's todo, and each task
 * still pending moves there once it is done (or failed at the cap). The current pass still ends
 * only when none of its tasks is todo or pending, and only then does the next pass become the
 * current one; at most one pass is leased ahead, and never past the last pass.
 *
 * <p>Not thread-safe: the owner serialises calls (and works on a {@link #copy()} that it swaps in
 * once the change is persisted).
 */
public final class TaskQueue {
  static final byte TODO = 1;
  static final byte PENDING = 2;
  static final byte DONE = 3;
  static final byte FAILED = 4;

  final Clock clock;
  final int maxFailures;
  final int totalPasses;
  final long[] taskRecords;
  final int tasks;

  JobState state = JobState.RUNNING;
  int pass;
  String failureReason = "";
  String lastFailure = "";
  long jobStartedMs;
  long version;
  byte[] states;
  long[] epochs;

  /** Each task's epoch when the current pass started; reports at or below it are from before. */
  long[] passStartEpochs;

  int[] failures;
  long[] deadlines;
  int[] finishes;
  String[] holders;

  /** The GetTask request id each pending task was handed out under ("" or null: none). */
  String[] requests;

  long[] dispatchedMs;
  IntRing todo;

  /** Tasks whose state is for the next pass (leased ahead), not the current one. */
  boolean[] ahead;

  /** The next pass's todo, while tasks are leased ahead (empty otherwise). */
  IntRing nextTodo;

  /** Pending tasks of both passes. */
  int pending;

  int done;
  int failed;
  int aheadPending;
  int aheadDone;
  int aheadFailed;
  List<PassLedger> history = new ArrayList<>();

  /**
   * A new job at the start of pass 0, every task todo in id order.
   *
   * @param taskRecords records per task (index = task id); at least one task
   */
  public TaskQueue(long[] taskRecords, int totalPasses, int maxFailures, Clock clock) {
    this(taskRecords, totalPasses, maxFailures, clock, true);
    jobStartedMs = clock.millis();
    PassCycle.startPass(this, 0, jobStartedMs);
  }

  TaskQueue(long[] taskRecords, int totalPasses, int maxFailures, Clock clock, boolean allocate) {
    if (taskRecords.length == 0) {
      throw new IllegalArgumentException("a job needs at least one task");
    }
    if (totalPasses < 1 || maxFailures < 1) {
      throw new IllegalArgumentException(
          "passes and max failures must be at least 1, got " + totalPasses + ", " + maxFailures);
    }
    this.taskRecords = taskRecords;
    this.tasks = taskRecords.length;
    this.totalPasses = totalPasses;
    this.maxFailures = maxFailures;
    this.clock = clock;
    if (allocate) {
      states = new byte[tasks];
      epochs = new long[tasks];
      passStartEpochs = new long[tasks];
      failures = new int[tasks];
      deadlines = new long[tasks];
      finishes = new int[tasks];
      holders = new String[tasks];
      requests = new String[tasks];
      dispatchedMs = new long[tasks];
      todo = new IntRing(tasks);
      ahead = new boolean[tasks];
      nextTodo = new IntRing(tasks);
    }
  }

  /** A deep copy to change and swap in after the change was persisted. */
  public TaskQueue copy() {
    return TaskQueueSnapshots.copy(this);
  }

  /** Grows with every change of state; equal versions mean nothing changed. */
  public long version() {
    return version;
  }

  public int taskCount() {
    return tasks;
  }

  public JobState state() {
    return state;
  }

  public int pass() {
    return pass;
  }

  public int totalPasses() {
    return totalPasses;
  }

  /**
   * How many tasks {@code trainer} may take in one request now: a share of todo that leaves at
   * least half of it to the other trainers of the pass (or of the pass before, early in a pass), so
   * that no trainer idles at the pass's end while another works through extra tasks; at least 1.
   */
  public int leaseShare(String trainer) {
    Set<String> seen = current().trainers;
    int trainers = seen.size() + (seen.contains(trainer) ? 0 : 1);
    if (pass > 0 && pass - 1 < history.size()) {
      trainers = Math.max(trainers, history.get(pass - 1).trainers.size());
    }
    int left = todo.isEmpty() ? (aheadOpen() ? nextTodo.size() : done + failed) : todo.size();
    return Math.max(1, left / (2 * Math.max(1, trainers)));
  }

  /** The trainers that hold a pending task. */
  public Set<String> holders() {
    Set<String> held = new java.util.TreeSet<>();
    for (int id = 0; id < tasks && held.size() < pending; id++) {
      if (states[id] == PENDING && holders[id] != null && !holders[id].isEmpty()) {
        held.add(holders[id]);
      }
    }
    return held;
  }

  /** Notes that task {@code id}, just handed out, went out in the answer to {@code requestId}. */
  public void handedOutUnder(int id, String requestId) {
    requests[id] = requestId;
  }

  /**
   * The tasks still pending with {@code trainer} that were handed out in the answer to GetTask
   * request {@code requestId}, in the order that answer gave them (empty for an empty id): a retry
   * of a request whose answer was lost gets them again.
   */
  public List<Dispatch> pendingUnder(String trainer, String requestId) {
    if (requestId.isEmpty() || pending == 0) {
      return List.of();
    }
    List<Integer> ids = new ArrayList<>();
    for (int id = 0; id < tasks; id++) {
      if (states[id] == PENDING && trainer.equals(holders[id]) && requestId.equals(requests[id])) {
        ids.add(id);
      }
    }
    // the k-th task of an answer got k task timeouts: by deadline is the answer's order
    ids.sort(Comparator.comparingLong(id -> deadlines[id]));
    List<Dispatch> out = new ArrayList<>(ids.size());
    for (int id : ids) {
      out.add(
          new Dispatch(Dispatch.Outcome.TASK, id, epochs[id], pass, totalPasses, "", passOf(id)));
    }
    return out;
  }

  /** True once a task of the job was handed out, or the job ended. */
  public boolean started() {
    if (state != JobState.RUNNING || pass > 0 || pending > 0 || todo.size() < tasks) {
      return true;
    }
    for (long e : epochs) {
      if (e > 0) {
        return true;
      }
    }
    return false;
  }

  /** The answer WAIT, with {@code reason} for the trainer. */
  public Dispatch waitFor(String reason) {
    return new Dispatch(Dispatch.Outcome.WAIT, -1, 0, pass, totalPasses, reason, -1);
  }

  /** True if {@code trainer} holds a pending task. */
  public boolean holds(String trainer) {
    if (pending == 0) {
      return false;
    }
    for (int id = 0; id < tasks; id++) {
      if (states[id] == PENDING && trainer.equals(holders[id])) {
        return true;
      }
    }
    return false;
  }

  /** True if {@link #next} for {@code requestedPass} would hand out a task (and change state). */
  public boolean canDispatch(int requestedPass) {
    return canDispatch(requestedPass, false);
  }

  /**
   * True if {@link #next(String, int, Duration, boolean)} would hand out a task (and change state).
   */
  public boolean canDispatch(int requestedPass, boolean leaseAhead) {
    return state == JobState.RUNNING
        && requestedPass == pass
        && (!todo.isEmpty() || (leaseAhead && PassCycle.canLeaseAhead(this)));
  }

  /** True while tasks of the next pass are leased ahead (the next pass has started early). */
  public boolean aheadOpen() {
    return history.size() > pass + 1;
  }

  /**
   * Hands out the head of todo for {@code requestedPass}, or says why there is none.
   *
   * @param timeout how long the trainer may hold the task
   */
  public Dispatch next(String trainer, int requestedPass, Duration timeout) {
    return next(trainer, requestedPass, timeout, false);
  }

  /**
   * Hands out the head of todo for {@code requestedPass}, or says why there is none. With {@code
   * leaseAhead} (an asynchronous trainer), a pass with nothing todo but tasks pending with others
   * hands out a task of the next pass instead of WAIT (see the class comment).
   *
   * @param timeout how long the trainer may hold the task
   */
  public Dispatch next(String trainer, int requestedPass, Duration timeout, boolean leaseAhead) {
    if (state == JobState.FAILED) {
      return answer(Dispatch.Outcome.JOB_FAILED);
    }
    if (state == JobState.FINISHED) {
      return answer(Dispatch.Outcome.JOB_FINISHED);
    }
    if (requestedPass < pass) {
      return answer(Dispatch.Outcome.PASS_FINISHED);
    }
    if (requestedPass > pass) {
      return answer(Dispatch.Outcome.PASS_NOT_STARTED);
    }
    long now = clock.millis();
    int id;
    if (!todo.isEmpty()) {
      id = todo.removeFirst();
    } else if (leaseAhead && PassCycle.canLeaseAhead(this)) {
      if (!aheadOpen()) {
        PassCycle.openAhead(this, now);
      }
      id = nextTodo.removeFirst();
      aheadPending++;
    } else {
      return answer(Dispatch.Outcome.WAIT);
    }
    states[id] = PENDING;
    epochs[id]++;
    deadlines[id] = now + timeout.toMillis();
    holders[id] = trainer;
    requests[id] = "";
    dispatchedMs[id] = now;
    pending++;
    ledgerOf(id).trainers.add(trainer);
    version++;
    return new Dispatch(Dispatch.Outcome.TASK, id, epochs[id], pass, totalPasses, "", passOf(id));
  }

  private Dispatch answer(Dispatch.Outcome outcome) {
    String reason = outcome == Dispatch.Outcome.JOB_FAILED ? failureReason : "";
    return new Dispatch(outcome, -1, 0, pass, totalPasses, reason, -1);
  }

  /** The pass task {@code id}'s state is for. */
  int passOf(int id) {
    return ahead[id] ? pass + 1 : pass;
  }

  PassLedger ledgerOf(int id) {
    return ahead[id] ? history.get(pass + 1) : current();
  }

  /**
   * A trainer reports the task trained. Accepted when (id, epoch) is the pending dispatch; a report
   * on a task already done counts as a duplicate; anything else is stale and ignored.
   */
  public ReportOutcome finished(long taskId, long epoch) {
    int id = checkId(taskId);
    if (states[id] == DONE && epoch > passStartEpochs[id] && epoch <= epochs[id]) {
      finishes[id]++;
      ledgerOf(id).duplicates++;
      version++;
      return ReportOutcome.DUPLICATE;
    }
    if (states[id] != PENDING || epochs[id] != epoch) {
      return ReportOutcome.STALE;
    }
    long now = clock.millis();
    long duration = dispatchedMs[id] > 0 ? Math.max(0, now - dispatchedMs[id]) : -1;
    release(id);
    states[id] = DONE;
    finishes[id]++;
    ledgerOf(id).records += taskRecords[id];
    PassCycle.countEnded(this, id, true);
    version++;
    PassCycle.checkPassEnd(this, now);
    return new ReportOutcome(true, false, duration);
  }

  /**
   * A trainer reports the task failed, or hands it back ({@code handedBack}: back to todo without
   * counting as a failure). Accepted when (id, epoch) is the pending dispatch, else ignored.
   */
  public ReportOutcome failed(long taskId, long epoch, String reason, boolean handedBack) {
    int id = checkId(taskId);
    if (states[id] != PENDING || epochs[id] != epoch) {
      return ReportOutcome.STALE;
    }
    long now = clock.millis();
    String holder = holders[id];
    release(id);
    if (handedBack) {
      states[id] = TODO;
      (ahead[id] ? nextTodo : todo).addLast(id);
    } else {
      lastFailure =
          "task " + id + " failed on trainer '" + holder + "': " + (reason == null ? "" : reason);
      PassCycle.requeueOrFail(this, id);
    }
    version++;
    PassCycle.checkPassEnd(this, now);
    return new ReportOutcome(true, false, -1);
  }

  /** True if a pending task is past its deadline (read-only; cheap enough to poll). */
  public boolean hasOverdue() {
    return TaskTakeBacks.hasOverdue(this);
  }

  /** Takes back every pending task past its deadline (a failure of the task); returns how many. */
  public int expireOverdue() {
    return TaskTakeBacks.expireOverdue(this);
  }

  /**
   * Takes back every task {@code trainer} holds, as if each had timed out: the trainer is gone (its
   * registration ended, or a new process registered under its name), so the tasks it leased would
   * otherwise wait out their deadlines, the k-th task of a lease k timeouts. Returns how many.
   */
  public int releaseHolder(String trainer, String why) {
    return TaskTakeBacks.releaseHolder(this, trainer, why);
  }

  /**
   * Takes back task {@code id} if it is still pending with {@code trainer} under {@code epoch}, as
   * a timeout: it was handed out in an answer that never reached the trainer. Returns whether it
   * was.
   */
  public boolean releaseUnanswered(int id, String trainer, long epoch) {
    return TaskTakeBacks.releaseUnanswered(this, id, trainer, epoch);
  }

  /**
   * Ends a running job at once as FAILED with {@code reason} (an operator's stop): no task is
   * handed out any more and trainers asking for one are told the job failed. Returns false, and
   * changes nothing, when the job had already ended.
   */
  public boolean stop(String reason) {
    return PassCycle.stop(this, reason);
  }

  /** Keeps a trainer's evaluation of {@code forPass} (the latest per trainer). */
  public void reportEvaluation(
      String trainer, int forPass, double loss, double accuracy, double auc) {
    PassCycle.reportEvaluation(this, trainer, forPass, loss, accuracy, auc);
  }

  /** The job's status (without the dataset and master fields, which the owner adds). */
  public JobStatus status() {
    return TaskQueueStatus.status(this);
  }

  List<PassStatus> passStatuses() {
    return TaskQueueStatus.passStatuses(this);
  }

  /** The current pass's counts. */
  TaskCounts counts() {
    return TaskQueueStatus.counts(this);
  }

  /** The counts of the pass leased ahead (see {@link TaskQueueStatus#aheadCounts}). */
  TaskCounts aheadCounts() {
    return TaskQueueStatus.aheadCounts(this);
  }

  /** The snapshot to persist (see {@link TaskQueueSnapshots}). */
  public MasterSnapshot snapshot() {
    return TaskQueueSnapshots.toSnapshot(this);
  }

  /** The snapshot, serialized (the fast path used on every change). */
  public byte[] snapshotBytes() {
    return TaskQueueSnapshots.encode(this);
  }

  /** Rebuilds a queue from a snapshot, with the dataset's records per task. */
  public static TaskQueue restore(
      MasterSnapshot snapshot, long[] taskRecords, int maxFailures, Clock clock) {
    return TaskQueueSnapshots.fromSnapshot(snapshot, taskRecords, maxFailures, clock);
  }

  PassLedger current() {
    return history.get(Math.min(pass, history.size() - 1));
  }

  private int checkId(long taskId) {
    if (taskId < 0 || taskId >= tasks) {
      throw new ServiceException(
          ErrorReason.UNKNOWN_TASK,
          "task "
              + taskId
              + " does not exist: the dataset has "
              + tasks
              + " tasks (0.."
              + (tasks - 1)
              + ")");
    }
    return (int) taskId;
  }

  void release(int id) {
    pending--;
    if (ahead[id]) {
      aheadPending--;
    }
    holders[id] = "";
    requests[id] = "";
    deadlines[id] = 0;
    dispatchedMs[id] = 0;
  }
}
