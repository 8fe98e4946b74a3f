package dev.paramserver.master.task;

import dev.paramserver.proto.v1.JobState;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;

/**
 * The reference model of the task queues (docs/design.md §3), written as plainly as possible: what
 * a {@link TaskQueue} must do, step by step. {@link TaskQueueModelTest} runs both side by side.
 */
final class QueueModel {
  enum St {
    TODO,
    PENDING,
    DONE,
    FAILED
  }

  /** The accounting of one pass. */
  static final class Ledger {
    long records;
    int duplicates;
    int timeouts;
    int[] finalCounts; // todo, pending, done, failed when the pass ended; null while it runs
  }

  final long[] records;
  final int passes;
  final int maxFailures;
  final long timeoutMs;
  JobState state = JobState.RUNNING;
  int pass;
  final St[] st;
  final long[] epoch;
  final long[] epochAtPassStart;
  final int[] failures;
  final int[] finishes;
  final long[] deadline;
  final Deque<Integer> todo = new ArrayDeque<>();
  final List<Ledger> ledgers = new ArrayList<>();

  QueueModel(long[] records, int passes, int maxFailures, long timeoutMs) {
    this.records = records;
    this.passes = passes;
    this.maxFailures = maxFailures;
    this.timeoutMs = timeoutMs;
    int n = records.length;
    st = new St[n];
    epoch = new long[n];
    epochAtPassStart = new long[n];
    failures = new int[n];
    finishes = new int[n];
    deadline = new long[n];
    startPass(0);
  }

  int count(St s) {
    int c = 0;
    for (St x : st) {
      if (x == s) {
        c++;
      }
    }
    return c;
  }

  int[] counts() {
    return new int[] {count(St.TODO), count(St.PENDING), count(St.DONE), count(St.FAILED)};
  }

  Ledger ledger() {
    return ledgers.get(Math.min(pass, ledgers.size() - 1));
  }

  /** The outcome a GetTask for {@code requested} must get; hands out a task if TASK. */
  Dispatch.Outcome next(int requested, long now) {
    if (state == JobState.FAILED) {
      return Dispatch.Outcome.JOB_FAILED;
    }
    if (state == JobState.FINISHED) {
      return Dispatch.Outcome.JOB_FINISHED;
    }
    if (requested < pass) {
      return Dispatch.Outcome.PASS_FINISHED;
    }
    if (requested > pass) {
      return Dispatch.Outcome.PASS_NOT_STARTED;
    }
    if (todo.isEmpty()) {
      return Dispatch.Outcome.WAIT;
    }
    int id = todo.removeFirst();
    st[id] = St.PENDING;
    epoch[id]++;
    deadline[id] = now + timeoutMs;
    return Dispatch.Outcome.TASK;
  }

  /** Applies a TaskFinished; returns "accepted", "duplicate" or "stale". */
  String finished(int id, long e) {
    if (st[id] == St.PENDING && epoch[id] == e) {
      st[id] = St.DONE;
      finishes[id]++;
      ledger().records += records[id];
      endPassIfDrained();
      return "accepted";
    }
    // a report of a dispatch of this pass on a task already done: a duplicate; a report of a
    // dispatch of an earlier pass is stale
    long firstEpochOfPass = epochAtPassStart[id] + 1;
    if (st[id] == St.DONE && e >= firstEpochOfPass && e <= epoch[id]) {
      finishes[id]++;
      ledger().duplicates++;
      return "duplicate";
    }
    return "stale";
  }

  /** Applies a TaskFailed; returns true if accepted. */
  boolean failed(int id, long e, boolean handedBack) {
    if (st[id] != St.PENDING || epoch[id] != e) {
      return false;
    }
    if (handedBack) {
      st[id] = St.TODO;
      todo.addLast(id);
    } else {
      failOnce(id);
    }
    endPassIfDrained();
    return true;
  }

  /** Takes back every pending task past its deadline, in id order; returns how many. */
  int expire(long now) {
    int expired = 0;
    for (int i = 0; i < st.length && state == JobState.RUNNING; i++) {
      if (st[i] == St.PENDING && deadline[i] <= now) {
        ledger().timeouts++;
        failOnce(i);
        expired++;
        endPassIfDrained();
      }
    }
    return expired;
  }

  private void failOnce(int id) {
    failures[id]++;
    if (failures[id] >= maxFailures) {
      st[id] = St.FAILED;
    } else {
      st[id] = St.TODO;
      todo.addLast(id);
    }
  }

  private void endPassIfDrained() {
    if (state != JobState.RUNNING || count(St.TODO) > 0 || count(St.PENDING) > 0) {
      return;
    }
    ledger().finalCounts = counts();
    if (count(St.DONE) == 0) {
      state = JobState.FAILED;
    } else if (pass + 1 >= passes) {
      pass = passes;
      state = JobState.FINISHED;
    } else {
      startPass(pass + 1);
    }
  }

  private void startPass(int p) {
    pass = p;
    todo.clear();
    Arrays.fill(st, St.TODO);
    Arrays.fill(failures, 0);
    Arrays.fill(finishes, 0);
    for (int i = 0; i < st.length; i++) {
      todo.addLast(i);
      epochAtPassStart[i] = epoch[i];
    }
    ledgers.add(new Ledger());
  }
}
