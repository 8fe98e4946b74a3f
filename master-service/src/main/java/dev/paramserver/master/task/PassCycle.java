package dev.paramserver.master.task;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.JobState;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The passes of a {@link TaskQueue} (its class comment has the rules): starting a pass, a task's
 * end in its pass (done, or failed at the cap), leasing the next pass ahead and promoting it, the
 * end of a pass and of the job, the trainers' evaluations of a pass. Functions of the queue's
 * state, called by the queue's changes only.
 */
final class PassCycle {
  private static final Logger log = LoggerFactory.getLogger(PassCycle.class);

  private PassCycle() {}

  /** Starts pass {@code p}: every task todo in id order, the counts and failures reset. */
  static void startPass(TaskQueue q, int p, long now) {
    q.pass = p;
    q.todo.clear();
    for (int i = 0; i < q.tasks; i++) {
      q.states[i] = TaskQueue.TODO;
      q.passStartEpochs[i] = q.epochs[i];
      q.failures[i] = 0;
      q.deadlines[i] = 0;
      q.finishes[i] = 0;
      q.holders[i] = "";
      q.requests[i] = "";
      q.dispatchedMs[i] = 0;
      q.todo.addLast(i);
    }
    q.pending = 0;
    q.done = 0;
    q.failed = 0;
    q.nextTodo.clear();
    Arrays.fill(q.ahead, false);
    q.aheadPending = 0;
    q.aheadDone = 0;
    q.aheadFailed = 0;
    q.lastFailure = "";
    q.history.add(new PassLedger(p, now));
    q.version++;
  }

  /**
   * True if a task of the next pass can be leased ahead now: the current pass has no task todo and
   * at least one done (so it cannot fail for want of one), and is not the last pass.
   */
  static boolean canLeaseAhead(TaskQueue q) {
    if (q.state != JobState.RUNNING || !q.todo.isEmpty() || q.pass + 1 >= q.totalPasses) {
      return false;
    }
    return q.aheadOpen() ? !q.nextTodo.isEmpty() : q.done > 0;
  }

  /** Starts the next pass early: its ledger, and every task this pass has done or failed. */
  static void openAhead(TaskQueue q, long now) {
    q.history.add(new PassLedger(q.pass + 1, now));
    for (int i = 0; i < q.tasks; i++) {
      if (q.states[i] == TaskQueue.DONE || q.states[i] == TaskQueue.FAILED) {
        moveAhead(q, i);
      }
    }
    log.info(
        "pass {} of {} has no task todo ({} pending): tasks of pass {} are leased ahead",
        q.pass,
        q.totalPasses,
        q.pending,
        q.pass + 1);
  }

  /** Moves a task the current pass is through with (done or failed) to the next pass's todo. */
  private static void moveAhead(TaskQueue q, int id) {
    q.ahead[id] = true;
    q.states[id] = TaskQueue.TODO;
    q.passStartEpochs[id] = q.epochs[id];
    q.failures[id] = 0;
    q.finishes[id] = 0;
    q.nextTodo.addLast(id);
  }

  /** A failure of task {@code id}: back to the tail of its pass's todo, or failed at the cap. */
  static void requeueOrFail(TaskQueue q, int id) {
    q.failures[id]++;
    if (q.failures[id] >= q.maxFailures) {
      q.states[id] = TaskQueue.FAILED;
      log.warn(
          "task {} reached the cap of {} failures in pass {}: it is skipped for the rest of the"
              + " pass; last failure: {}",
          id,
          q.maxFailures,
          q.passOf(id),
          q.lastFailure);
      countEnded(q, id, false);
    } else {
      q.states[id] = TaskQueue.TODO;
      (q.ahead[id] ? q.nextTodo : q.todo).addLast(id);
    }
  }

  /**
   * Counts a task done (or failed at the cap) in its pass; one of the current pass moves on to the
   * next pass's todo while that pass is leased ahead.
   */
  static void countEnded(TaskQueue q, int id, boolean isDone) {
    if (q.ahead[id]) {
      q.aheadDone += isDone ? 1 : 0;
      q.aheadFailed += isDone ? 0 : 1;
      return;
    }
    q.done += isDone ? 1 : 0;
    q.failed += isDone ? 0 : 1;
    if (q.aheadOpen()) {
      moveAhead(q, id);
    }
  }

  /**
   * Ends the current pass if none of its tasks is todo or pending: the job fails if none was done,
   * finishes after the last pass, else the next pass (the one leased ahead, if open) begins.
   */
  static void checkPassEnd(TaskQueue q, long now) {
    if (q.state != JobState.RUNNING || !q.todo.isEmpty() || q.pending - q.aheadPending > 0) {
      return;
    }
    PassLedger ledger = q.current();
    ledger.endedMs = now;
    ledger.finalCounts = q.counts();
    q.version++;
    if (q.done == 0) {
      q.state = JobState.FAILED;
      q.failureReason =
          "every task of pass "
              + q.pass
              + " failed ("
              + q.failed
              + " tasks reached the cap of "
              + q.maxFailures
              + " failures); last failure: "
              + q.lastFailure;
      log.error("the job FAILED: {}", q.failureReason);
      return;
    }
    log.info(
        "pass {} of {} ended: {} done, {} failed, {} records, {} duplicates, {} timeouts",
        q.pass,
        q.totalPasses,
        q.done,
        q.failed,
        ledger.records,
        ledger.duplicates,
        ledger.timeouts);
    if (q.pass + 1 >= q.totalPasses) {
      q.pass = q.totalPasses;
      q.state = JobState.FINISHED;
      return;
    }
    if (q.aheadOpen()) {
      promoteAhead(q);
    } else {
      startPass(q, q.pass + 1, now);
    }
  }

  /**
   * The pass leased ahead becomes the current one: every task has moved to it (each as the current
   * pass was through with it), so its queues are the current ones now.
   */
  private static void promoteAhead(TaskQueue q) {
    q.pass++;
    IntRing t = q.todo;
    q.todo = q.nextTodo;
    q.nextTodo = t;
    q.nextTodo.clear();
    Arrays.fill(q.ahead, false);
    q.done = q.aheadDone;
    q.failed = q.aheadFailed;
    q.aheadPending = 0;
    q.aheadDone = 0;
    q.aheadFailed = 0;
    q.lastFailure = "";
    q.version++;
  }

  /** Ends a running job as FAILED with {@code reason}; false when it had already ended. */
  static boolean stop(TaskQueue q, String reason) {
    if (q.state == JobState.FINISHED || q.state == JobState.FAILED) {
      return false;
    }
    long now = q.clock.millis();
    PassLedger ledger = q.current();
    if (ledger.endedMs == 0) {
      ledger.endedMs = now;
      ledger.finalCounts = q.counts();
    }
    if (q.aheadOpen()) {
      PassLedger next = q.history.get(q.pass + 1);
      next.endedMs = now;
      next.finalCounts = q.aheadCounts();
    }
    q.state = JobState.FAILED;
    q.failureReason = reason;
    q.version++;
    log.warn("the job was stopped: {}", reason);
    return true;
  }

  /** Keeps a trainer's evaluation of {@code forPass}, a pass that has started. */
  static void reportEvaluation(
      TaskQueue q, String trainer, int forPass, double loss, double accuracy, double auc) {
    if (forPass < 0 || forPass >= q.history.size()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "evaluation for pass "
              + forPass
              + " but that pass has not started (current pass "
              + q.pass
              + " of "
              + q.totalPasses
              + ")");
    }
    if (!Double.isFinite(loss) || !Double.isFinite(accuracy)) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "evaluation of pass "
              + forPass
              + " has a non-finite loss or accuracy: "
              + loss
              + ", "
              + accuracy);
    }
    q.history.get(forPass).evaluations.put(trainer, new PassLedger.Evaluation(loss, accuracy, auc));
    q.version++;
  }
}
