package dev.paramserver.localcluster;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The main job: starts etcd, masters, pservers and trainers on loopback, follows the job through
 * the leader's {@code /admin/status}, prints progress per pass and finally {@code RESULT
 * accuracy=<a> loss=<l> samples_per_s=<s> elapsed_s=<t>}, then stops everything. Exit codes: 0
 * done, 1 the job failed or timed out, 2 bad usage or nothing to run. Run {@code --help} for the
 * options ({@link RunOptions#USAGE}).
 */
public final class RunLocal {
  private static final Duration POLL = Duration.ofSeconds(1);
  private static final Duration EVAL_WAIT = Duration.ofSeconds(60);

  private final PrintStream out;
  private final PrintStream err;
  private volatile boolean quiet;

  RunLocal(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the job with {@code args} and returns the process exit code. */
  public static int run(String[] args) {
    return new RunLocal(System.out, System.err).execute(args);
  }

  int execute(String[] args) {
    long t0 = System.nanoTime();
    RunOptions options;
    try {
      options = RunOptions.parse(args);
    } catch (RunOptions.UsageException e) {
      err.println("run-local: " + e.getMessage());
      err.print(RunOptions.USAGE);
      return 2;
    }
    if (options.help) {
      out.print(RunOptions.USAGE);
      return 0;
    }
    ClusterSpec spec;
    try {
      spec = spec(options, JarLocator.locate(options.jarDir));
    } catch (LocalClusterException | IllegalStateException | IllegalArgumentException e) {
      err.println("run-local: " + e.getMessage());
      return 2;
    }
    LocalCluster cluster = new LocalCluster(spec);
    cluster.addListener(this::onEvent);
    out.println(
        String.format(
            "run folder %s: %d master(s), %d pserver(s), %d trainer(s), job '%s'",
            spec.runDir(),
            spec.count(Role.MASTER),
            spec.count(Role.PSERVER),
            spec.count(Role.TRAINER),
            spec.job()));
    String result;
    try {
      cluster.start();
      out.println(
          String.format(
              Locale.ROOT,
              "cluster up in %.1f s (etcd %s); state in %s",
              seconds(t0),
              cluster.etcdEndpoint(),
              cluster.clusterFile()));
      result = follow(cluster, options, t0);
    } catch (LocalClusterException e) {
      quiet = true;
      err.println("FAILED: " + e.getMessage());
      printLogs(cluster);
      stop(cluster);
      return 1;
    }
    quiet = true;
    stop(cluster);
    out.println(result);
    return 0;
  }

  /** Follows the job until its result line; throws with the reason on failure or timeout. */
  private String follow(LocalCluster cluster, RunOptions options, long t0) {
    ProgressPrinter progress = new ProgressPrinter(out);
    long deadline = t0 + options.timeout.toNanos();
    long finishedAt = 0;
    while (true) {
      checkProcesses(cluster);
      Optional<JobStatusView> status = cluster.jobStatus();
      if (status.isPresent()) {
        JobStatusView job = status.get();
        progress.update(job, System.nanoTime());
        if (job.isFailed()) {
          throw new LocalClusterException(
              "the job failed: "
                  + (job.failureReason().isEmpty() ? "(no reason given)" : job.failureReason()));
        }
        if (job.isFinished()) {
          cluster.markJobEnded();
          List<JobStatusView.PassView> passes = job.passes();
          if (!passes.isEmpty() && passes.get(passes.size() - 1).evalReports() > 0) {
            return resultLine(passes, seconds(t0));
          }
          if (finishedAt == 0) {
            finishedAt = System.nanoTime();
            out.println("job finished; waiting for the evaluation of the last pass");
          } else if (System.nanoTime() - finishedAt > EVAL_WAIT.toNanos()) {
            throw new LocalClusterException(
                "the job finished but no evaluation of the last pass arrived within "
                    + EVAL_WAIT.toSeconds()
                    + " s (was --test given? see the trainer logs)");
          }
        }
      }
      if (System.nanoTime() > deadline) {
        throw new LocalClusterException(
            "timed out after "
                + options.timeout.toSeconds()
                + " s (--timeout); last job status: "
                + status.map(JobStatusView::toString).orElse("no master answered as leader"));
      }
      sleep(POLL);
    }
  }

  static String resultLine(List<JobStatusView.PassView> passes, double elapsedSeconds) {
    JobStatusView.PassView last = passes.get(passes.size() - 1);
    return String.format(
        Locale.ROOT,
        "RESULT accuracy=%.4f loss=%.4f samples_per_s=%.1f elapsed_s=%.1f",
        last.evalAccuracy(),
        last.evalLoss(),
        ProgressPrinter.overallSamplesPerSecond(passes),
        elapsedSeconds);
  }

  private static void checkProcesses(LocalCluster cluster) {
    for (ProcessInfo p : cluster.processes()) {
      if (p.state() == ProcessState.FAILED) {
        throw new LocalClusterException(
            p.name() + " keeps dying (restarted " + p.restarts() + " times); see " + p.log());
      }
    }
  }

  static ClusterSpec spec(RunOptions o, Map<Role, Path> jars) {
    Path runDir = o.runDir.toAbsolutePath().normalize();
    ClusterSpec.Builder b =
        ClusterSpec.builder(runDir).job(o.job).masters(o.masters).pservers(o.pservers);
    b.trainers(o.trainers);
    jars.forEach(b::jar);
    b.property(Role.MASTER, "paramserver.master.passes", Integer.toString(o.passes));
    b.property(Role.TRAINER, "paramserver.trainer.train-data", absoluteGlob(o.trainGlob()));
    b.property(Role.TRAINER, "paramserver.trainer.test-data", absoluteGlob(o.testGlob()));
    b.property(Role.TRAINER, "paramserver.trainer.model", o.model);
    b.property(Role.TRAINER, "paramserver.trainer.optimizer", o.optimizer);
    b.property(Role.TRAINER, "paramserver.trainer.learning-rate", o.lr);
    b.property(Role.TRAINER, "paramserver.trainer.batch-size", Integer.toString(o.batchSize));
    if (o.hidden != null) {
      b.property(Role.TRAINER, "paramserver.trainer.hidden", o.hidden);
    }
    b.property(Role.TRAINER, "paramserver.trainer.sync", Boolean.toString(o.sync));
    if (o.format != null) {
      b.property(Role.TRAINER, "paramserver.trainer.format", o.format);
    }
    b.property(
        Role.TRAINER, "paramserver.trainer.model-output", runDir.resolve("model.pb").toString());
    for (RunOptions.Extra e : o.extras) {
      b.property(e.role(), e.key(), e.value());
    }
    return b.build();
  }

  /** Services run in the run folder, so a relative glob is made absolute here. */
  static String absoluteGlob(String glob) {
    Path p = Path.of(glob);
    return p.isAbsolute() ? glob : Path.of("").toAbsolutePath().resolve(glob).toString();
  }

  private void onEvent(ClusterEvent e) {
    if (quiet) {
      return;
    }
    switch (e.type()) {
      case RESTARTING, RESTARTED, FAILED, ETCD_STOPPED -> out.println(e.message());
      default -> {}
    }
  }

  private void stop(LocalCluster cluster) {
    out.println("stopping the cluster");
    cluster.close();
  }

  private void printLogs(LocalCluster cluster) {
    err.println("logs:");
    for (ProcessInfo p : cluster.processes()) {
      err.println("  " + p.name() + " " + p.state() + ": " + p.log());
    }
    err.println("  etcd: " + cluster.spec().runDir().resolve("logs").resolve("etcd.log"));
    for (ProcessInfo p : cluster.processes()) {
      if (p.state() == ProcessState.FAILED || p.role() == Role.MASTER) {
        err.println("---- last lines of " + p.log() + " ----");
        err.println(tail(p.log(), 15));
      }
    }
  }

  static String tail(Path file, int lines) {
    try {
      List<String> all = Files.readAllLines(file, StandardCharsets.UTF_8);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException | RuntimeException e) {
      return "(cannot read " + file + ": " + e.getMessage() + ")";
    }
  }

  private static double seconds(long sinceNanos) {
    return (System.nanoTime() - sinceNanos) / 1e9;
  }

  private static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LocalClusterException("interrupted", e);
    }
  }
}
