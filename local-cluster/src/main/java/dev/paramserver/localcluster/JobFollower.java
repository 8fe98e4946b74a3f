package dev.paramserver.localcluster;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.JsonNode;

/**
 * Follows a job through the leader's status until it ends: prints progress, and returns the {@code
 * RESULT ...} line once the job is FINISHED and its last pass evaluated. Throws {@link
 * LocalClusterException} with the reason when the job fails, a process keeps dying, the evaluation
 * never arrives or time runs out.
 */
final class JobFollower {

  /** Where the follower reads the cluster. */
  interface Source {
    /** The leader's {@code /admin/status}; throws LocalClusterException when none answers. */
    JsonNode leaderStatus();

    List<ProcessInfo> processes();

    /** Called once the job is seen FINISHED: trainers that exit with 0 are then done. */
    void jobEnded();
  }

  private final Source source;
  private final PrintStream out;
  private final Duration poll;
  private final Duration evalWait;
  private volatile List<JobStatusView.PassView> lastPasses = List.of();

  JobFollower(Source source, PrintStream out, Duration poll, Duration evalWait) {
    this.source = source;
    this.out = out;
    this.poll = poll;
    this.evalWait = evalWait;
  }

  static Source source(LocalCluster cluster) {
    return new Source() {
      @Override
      public JsonNode leaderStatus() {
        return cluster.masterStatus();
      }

      @Override
      public List<ProcessInfo> processes() {
        return cluster.processes();
      }

      @Override
      public void jobEnded() {
        cluster.markJobEnded();
      }
    };
  }

  /** Follows the job started at {@code t0} (System.nanoTime) for at most {@code timeout}. */
  String follow(long t0, Duration timeout) {
    ProgressPrinter progress = new ProgressPrinter(out);
    long deadline = t0 + timeout.toNanos();
    long finishedAt = 0;
    String lastSeen = "no master answered yet";
    while (true) {
      checkProcesses();
      JobStatusView job = null;
      try {
        JsonNode status = source.leaderStatus();
        if (status.has("job")) {
          job = new JobStatusView(status.get("job"));
          lastSeen = job.toString();
        } else {
          lastSeen = "the leader reports no job: " + status;
        }
      } catch (LocalClusterException e) {
        lastSeen = e.getMessage();
      }
      if (job != null) {
        progress.update(job, System.nanoTime());
        if (job.isFailed()) {
          throw new LocalClusterException(
              "the job failed: "
                  + (job.failureReason().isEmpty() ? "(no reason given)" : job.failureReason()));
        }
        if (job.isFinished()) {
          source.jobEnded();
          long now = System.nanoTime();
          finishedAt = finishedAt == 0 ? now : finishedAt;
          List<JobStatusView.PassView> passes = job.passes();
          int reports = passes.isEmpty() ? 0 : passes.get(passes.size() - 1).evalReports();
          if (reports > 0) {
            // one trainer evaluates the last pass, once the job is finished
            lastPasses = passes;
            return resultLine(passes, (now - t0) / 1e9);
          } else if (now - finishedAt > evalWait.toNanos()) {
            throw new LocalClusterException(
                "the job finished but no evaluation of the last pass arrived within "
                    + evalWait.toSeconds()
                    + " s (was --test given? see the trainer logs)");
          }
        }
      }
      if (System.nanoTime() > deadline) {
        throw new LocalClusterException(
            "timed out after " + timeout.toSeconds() + " s (--timeout); last seen: " + lastSeen);
      }
      sleep(poll);
    }
  }

  /**
   * The RESULT line: the last pass's evaluation, the samples per second over the passes, the
   * seconds since launch ({@code elapsed_s}) and the seconds of training, from the first pass's
   * start to the last pass's end as the master stamped them ({@code train_s}). Fields are only
   * added, at the end.
   */
  static String resultLine(List<JobStatusView.PassView> passes, double elapsedSeconds) {
    JobStatusView.PassView last = passes.get(passes.size() - 1);
    return String.format(
        Locale.ROOT,
        "RESULT accuracy=%.4f loss=%.4f samples_per_s=%.1f elapsed_s=%.1f train_s=%.1f",
        last.evalAccuracy(),
        last.evalLoss(),
        ProgressPrinter.overallSamplesPerSecond(passes),
        elapsedSeconds,
        trainingSeconds(passes));
  }

  /** Seconds from the first pass's start to the last pass's end (the master's stamps), or 0. */
  static double trainingSeconds(List<JobStatusView.PassView> passes) {
    long first = Long.MAX_VALUE;
    long last = 0;
    for (JobStatusView.PassView p : passes) {
      if (p.startedMs() > 0) {
        first = Math.min(first, p.startedMs());
      }
      last = Math.max(last, p.endedMs());
    }
    return first != Long.MAX_VALUE && last > first ? (last - first) / 1000.0 : 0;
  }

  /** The epoch milliseconds the first pass started at (the master's stamp), or 0. */
  static long firstPassStartMs(List<JobStatusView.PassView> passes) {
    return passes.stream()
        .mapToLong(JobStatusView.PassView::startedMs)
        .filter(ms -> ms > 0)
        .min()
        .orElse(0);
  }

  /** The passes of the finished job {@link #follow} returned the RESULT of (empty before). */
  List<JobStatusView.PassView> finishedPasses() {
    return lastPasses;
  }

  private void checkProcesses() {
    for (ProcessInfo p : source.processes()) {
      if (p.state() == ProcessState.FAILED) {
        String refused = StartupFailure.reasonIn(p.log());
        if (refused != null) {
          throw new LocalClusterException(
              p.name() + " refused to start: " + refused + " (see " + p.log() + ")");
        }
        throw new LocalClusterException(
            p.name() + " keeps dying (restarted " + p.restarts() + " times); see " + p.log());
      }
    }
  }

  private static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LocalClusterException("interrupted while following the job", e);
    }
  }
}
