package dev.paramserver.master.task;

import java.util.ArrayList;
import java.util.List;

/**
 * Tasks handed out in GetTask answers that failed because the master stopped serving before their
 * save was confirmed: the trainer never got them, yet the save may have reached etcd. When the
 * master serves again, those the loaded state holds with the same holder and epoch are taken back
 * at once, instead of each waiting for its timeout (the k-th of an answer k timeouts). Thread-safe.
 */
final class UnansweredTasks {
  private static final int MAX = 1024;

  /** A task handed out in an answer that did not reach its trainer. */
  record Entry(String trainer, int taskId, long epoch) {}

  private final List<Entry> entries = new ArrayList<>();

  /** Remembers the tasks of a failed answer to {@code trainer}. */
  synchronized void note(String trainer, Dispatch first, List<Dispatch> extra) {
    List<Dispatch> all = new ArrayList<>(extra);
    all.add(first);
    for (Dispatch d : all) {
      if (d.outcome() == Dispatch.Outcome.TASK && entries.size() < MAX) {
        entries.add(new Entry(trainer, d.taskId(), d.epoch()));
      }
    }
  }

  /** The tasks remembered, forgotten here. */
  synchronized List<Entry> drain() {
    List<Entry> out = List.copyOf(entries);
    entries.clear();
    return out;
  }

  /** Takes back in {@code q} each of {@code lost} still pending as handed out; returns how many. */
  static int takeBack(TaskQueue q, List<Entry> lost) {
    int n = 0;
    for (Entry e : lost) {
      n += q.releaseUnanswered(e.taskId(), e.trainer(), e.epoch()) ? 1 : 0;
    }
    return n;
  }
}
