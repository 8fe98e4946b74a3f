package dev.paramserver.localcluster;

import java.io.PrintStream;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Turns successive job statuses into progress lines: one when a pass ends (with its evaluation once
 * reported), and task counts of the running pass at most every 5 s when they change.
 */
final class ProgressPrinter {
  private static final long TASKS_EVERY_NANOS = 5_000_000_000L;
  private static final long EVAL_GRACE_NANOS = 15_000_000_000L;

  private final PrintStream out;
  private final Set<Integer> donePrinted = new HashSet<>();
  private final Set<Integer> evalPrinted = new HashSet<>();
  private final Map<Integer, Long> endSeen = new HashMap<>();
  private String lastState = "";
  private String lastTasks = "";
  private long lastTasksAt;
  private boolean tasksPrinted;

  ProgressPrinter(PrintStream out) {
    this.out = out;
  }

  void update(JobStatusView job, long nowNanos) {
    int total = job.totalPasses();
    if (!job.state().equals(lastState)) {
      lastState = job.state();
      out.println("job " + lastState.toLowerCase(Locale.ROOT).replace('_', ' '));
    }
    for (JobStatusView.PassView p : job.passes()) {
      if (p.endedMs() <= 0) {
        continue;
      }
      String label = "pass " + (p.pass() + 1) + "/" + total;
      boolean hasEval = p.evalReports() > 0;
      if (!donePrinted.contains(p.pass())) {
        long seen = endSeen.computeIfAbsent(p.pass(), k -> nowNanos);
        if (hasEval) {
          out.println(
              String.format(
                  Locale.ROOT,
                  "%s done: records=%d loss=%.4f accuracy=%.4f samples/s=%.0f",
                  label,
                  p.records(),
                  p.evalLoss(),
                  p.evalAccuracy(),
                  samplesPerSecond(p)));
          donePrinted.add(p.pass());
          evalPrinted.add(p.pass());
        } else if (nowNanos - seen > EVAL_GRACE_NANOS || job.isFailed()) {
          out.println(
              String.format(
                  Locale.ROOT,
                  "%s done: records=%d samples/s=%.0f (evaluation pending)",
                  label,
                  p.records(),
                  samplesPerSecond(p)));
          donePrinted.add(p.pass());
        }
      } else if (hasEval && !evalPrinted.contains(p.pass())) {
        out.println(
            String.format(
                Locale.ROOT,
                "%s evaluation: loss=%.4f accuracy=%.4f",
                label,
                p.evalLoss(),
                p.evalAccuracy()));
        evalPrinted.add(p.pass());
      }
    }
    if ("RUNNING".equals(job.state())) {
      JobStatusView.TaskCounts t = job.tasks();
      String tasks =
          String.format(
              Locale.ROOT,
              "pass %d/%d: tasks todo=%d pending=%d done=%d failed=%d",
              Math.min(job.pass() + 1, Math.max(total, 1)),
              total,
              t.todo(),
              t.pending(),
              t.done(),
              t.failed());
      if (!tasks.equals(lastTasks)
          && (!tasksPrinted || nowNanos - lastTasksAt >= TASKS_EVERY_NANOS)) {
        tasksPrinted = true;
        out.println(tasks);
        lastTasks = tasks;
        lastTasksAt = nowNanos;
      }
    }
  }

  static double samplesPerSecond(JobStatusView.PassView p) {
    long ms = p.endedMs() - p.startedMs();
    return ms > 0 && p.startedMs() > 0 ? p.records() * 1000.0 / ms : 0;
  }

  /** Records of all passes over the time from the first start to the last end. */
  static double overallSamplesPerSecond(List<JobStatusView.PassView> passes) {
    long records = 0;
    for (JobStatusView.PassView p : passes) {
      records += p.records();
    }
    double seconds = JobFollower.trainingSeconds(passes);
    return seconds > 0 ? records / seconds : 0;
  }
}
