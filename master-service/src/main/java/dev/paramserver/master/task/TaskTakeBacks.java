package dev.paramserver.master.task;

import dev.paramserver.proto.v1.JobState;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;

/**
 * Pending tasks of a {@link TaskQueue} taken back without a report, each counted as a timeout of
 * its pass (back to todo, or failed at the cap): past their deadline, held by a trainer that is
 * gone, or handed out in an answer that never reached the trainer. Functions of the queue's state,
 * called by the queue's changes only.
 */
final class TaskTakeBacks {
  private TaskTakeBacks() {}

  static boolean hasOverdue(TaskQueue q) {
    if (q.pending == 0 || q.state != JobState.RUNNING) {
      return false;
    }
    long now = q.clock.millis();
    for (int i = 0; i < q.tasks; i++) {
      if (q.states[i] == TaskQueue.PENDING && q.deadlines[i] <= now) {
        return true;
      }
    }
    return false;
  }

  static int expireOverdue(TaskQueue q) {
    long now = q.clock.millis();
    return takeBack(
        q,
        i -> q.deadlines[i] <= now,
        i ->
            "task "
                + i
                + " timed out on trainer '"
                + q.holders[i]
                + "' (held "
                + (q.dispatchedMs[i] > 0 ? now - q.dispatchedMs[i] : -1)
                + " ms)");
  }

  static int releaseHolder(TaskQueue q, String trainer, String why) {
    return takeBack(
        q,
        i -> trainer.equals(q.holders[i]),
        i -> "task " + i + " was held by trainer '" + trainer + "', which " + why);
  }

  static boolean releaseUnanswered(TaskQueue q, int id, String trainer, long epoch) {
    return takeBack(
            q,
            i -> i == id && q.epochs[i] == epoch && trainer.equals(q.holders[i]),
            i ->
                "task "
                    + i
                    + " was handed to trainer '"
                    + trainer
                    + "' in an answer that never reached it (the master stopped leading before"
                    + " it was saved)")
        > 0;
  }

  /**
   * Takes back every pending task that {@code which} selects, as a timeout of the pass (back to
   * todo, or failed at the cap), {@code why} saying why; returns how many.
   */
  private static int takeBack(TaskQueue q, IntPredicate which, IntFunction<String> why) {
    if (q.pending == 0 || q.state != JobState.RUNNING) {
      return 0;
    }
    long now = q.clock.millis();
    int taken = 0;
    for (int i = 0; i < q.tasks && q.state == JobState.RUNNING; i++) {
      if (q.states[i] == TaskQueue.PENDING && which.test(i)) {
        q.lastFailure = why.apply(i);
        q.release(i);
        q.ledgerOf(i).timeouts++;
        PassCycle.requeueOrFail(q, i);
        q.version++;
        taken++;
        PassCycle.checkPassEnd(q, now);
      }
    }
    return taken;
  }
}
