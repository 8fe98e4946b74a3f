package dev.paramserver.localcluster;

import dev.paramserver.recordio.RecordIndex;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine;

/**
 * The main job: starts etcd, masters, pservers and trainers on loopback, follows the job through
 * the leader's {@code /admin/status}, prints progress per pass and finally {@code RESULT
 * accuracy=<a> loss=<l> samples_per_s=<s> elapsed_s=<t> train_s=<t>}, then stops everything. Exit
 * codes: 0 done, 1 the job failed or timed out, 2 bad usage or nothing to run. Run {@code --help}
 * for the options ({@link RunOptions}).
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

  /** Runs the job with validated {@code options} and returns the process exit code. */
  public static int run(RunOptions options) {
    return new RunLocal(System.out, System.err).execute(options);
  }

  /** The help of the options, as {@code --help} prints it. */
  static String usage() {
    return new CommandLine(new RunOptions()).getUsageMessage();
  }

  int execute(String[] args) {
    RunOptions options;
    try {
      options = RunOptions.parse(args);
    } catch (RunOptions.UsageException e) {
      err.println("run-local: " + e.getMessage());
      err.print(usage());
      return 2;
    }
    if (options.help) {
      out.print(usage());
      return 0;
    }
    return execute(options);
  }

  int execute(RunOptions options) {
    long t0 = System.nanoTime();
    long launchedMs = System.currentTimeMillis();
    if (options.format != null && !options.format.equals("recordio")) {
      // psctl run-local (behind scripts/run-local.sh) converts LibSVM input before it gets here
      err.println(
          "run-local: --format "
              + options.format
              + " needs the input converted to RecordIO first: use psctl run-local or"
              + " scripts/run-local.sh, which convert it, or psctl convert");
      return 2;
    }
    ClusterSpec spec;
    LocalCluster cluster;
    try {
      checkInputs(options);
      spec = spec(options, JarLocator.locate(options.jarDir));
      cluster = new LocalCluster(spec);
    } catch (RuntimeException e) {
      err.println("run-local: " + e.getMessage());
      return 2;
    }
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
      // on a JDK 25 the job's own processes record their missing start-up caches
      if (InRunRecordings.applies(spec)) {
        InRunRecordings.begin(spec);
      }
      cluster.start();
      out.println(
          String.format(
              Locale.ROOT,
              "cluster up in %.1f s (etcd %s); state in %s",
              seconds(t0),
              cluster.etcdEndpoint(),
              cluster.clusterFile()));
      out.print(reachIt(cluster));
      if (spec.count(Role.TRAINER) == 0) {
        out.println(externalTrainers(cluster, options));
      }
      JobFollower follower = new JobFollower(JobFollower.source(cluster), out, POLL, EVAL_WAIT);
      result = follower.follow(t0, options.timeout);
      out.println(timeSpent(follower.finishedPasses(), launchedMs, seconds(t0)));
    } catch (LocalClusterException e) {
      quiet = true;
      err.println("FAILED: " + e.getMessage());
      printLogs(cluster);
      stop(cluster);
      return 1;
    } catch (RuntimeException e) {
      InRunRecordings.finish(spec); // drops what was begun: the next run records again
      throw e;
    }
    quiet = true;
    if (InRunRecordings.recording(spec)) {
      out.println(result); // the start-up caches written as the services exit are the next run's
      stop(cluster);
    } else {
      stop(cluster);
      out.println(result);
    }
    return 0;
  }

  static ClusterSpec spec(RunOptions o, Map<Role, Path> jars) {
    Path runDir = o.runDir().toAbsolutePath().normalize();
    ClusterSpec.Builder b =
        ClusterSpec.builder(runDir).job(o.job).masters(o.masters).pservers(o.pservers);
    b.trainers(o.trainers);
    b.serving(o.serving);
    if (o.trainingNice != null) {
      b.trainingNiceness(o.trainingNice);
    }
    // missing start-up archives come from a short training job (once per build and Java)
    b.archiveTrainingJob(true);
    jars.forEach(b::jar);
    b.startTimeout(o.timeout); // a loaded machine may start JVMs slowly: only --timeout limits it
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
    optional(b, "mode", o.mode);
    optional(b, "staleness", o.staleness);
    optional(
        b,
        "init-from",
        o.initFrom == null || o.initFrom.contains("://")
            ? o.initFrom
            : Path.of(o.initFrom).toAbsolutePath().toString());
    optional(b, "momentum", o.momentum);
    optional(b, "weight-decay", o.weightDecay);
    optional(b, "beta1", o.beta1);
    optional(b, "beta2", o.beta2);
    optional(b, "epsilon", o.epsilon);
    optional(b, "clip-value", o.clipValue);
    optional(b, "clip-norm", o.clipNorm);
    optional(b, "lr-schedule", o.lrSchedule);
    optional(b, "lr-step-size", o.lrStepSize);
    optional(b, "lr-gamma", o.lrGamma);
    optional(b, "lr-warmup-steps", o.lrWarmupSteps);
    optional(b, "lr-total-steps", o.lrTotalSteps);
    optional(b, "lr-min", o.lrMin);
    optional(b, "sparse.optimizer", o.sparseOptimizer);
    optional(b, "sparse.learning-rate", o.sparseLr);
    b.property(
        Role.TRAINER, "paramserver.trainer.model-output", runDir.resolve("model.pb").toString());
    b.property(
        Role.TRAINER, "paramserver.trainer.onnx-output", runDir.resolve("model.onnx").toString());
    // the run's tracking (metrics.jsonl, params.json, the event file) goes beside the final model
    // too: the local cluster points the master's paramserver.master.tracking.dir at the run folder
    for (RunOptions.Extra e : o.extras) {
      b.property(e.role(), e.key(), e.value());
    }
    ClusterSpec s = b.build();
    // a process that records its start-up cache writes it as it exits: give it time to
    return InRunRecordings.applies(s) ? b.stopTimeout(InRunRecordings.STOP_TIMEOUT).build() : s;
  }

  /**
   * Where the running job is: the console's URL (the first master's HTTP port; a standby's page
   * links to the leader) and the {@code PSCTL_*} exports that point psctl at the job, one line
   * each.
   */
  static String reachIt(LocalCluster cluster) {
    String master =
        cluster.processes().stream()
            .filter(p -> p.role() == Role.MASTER && p.httpPort() > 0)
            .map(p -> "http://127.0.0.1:" + p.httpPort())
            .findFirst()
            .orElse(null);
    StringBuilder b = new StringBuilder();
    if (master != null) {
      b.append("console: ").append(master).append("/\n");
    }
    b.append("psctl, in another terminal (bin/psctl status, watch, checkpoint, stop):\n");
    if (master != null) {
      b.append("  export PSCTL_MASTER=").append(master).append("\n");
    }
    b.append("  export PSCTL_ETCD=").append(cluster.etcdEndpoint()).append("\n");
    b.append("  export PSCTL_JOB=").append(cluster.spec().job()).append("\n");
    b.append("  export PSCTL_TOKEN=").append(cluster.adminToken()).append("\n");
    cluster.processes().stream()
        .filter(p -> p.role() == Role.SERVING)
        .forEach(
            p ->
                b.append("serving replica ")
                    .append(p.name())
                    .append(": gRPC 127.0.0.1:")
                    .append(p.grpcPort())
                    .append(", http://127.0.0.1:")
                    .append(p.httpPort())
                    .append("/admin/status\n"));
    return b.toString();
  }

  /**
   * One line saying how the run's seconds went: starting (launch until the master began the first
   * pass), training (the passes, as train_s) and the rest (the last evaluation, reading the
   * result).
   */
  static String timeSpent(List<JobStatusView.PassView> passes, long launchedMs, double elapsedS) {
    long firstPassMs = JobFollower.firstPassStartMs(passes);
    double startS = firstPassMs > 0 ? Math.max(0, (firstPassMs - launchedMs) / 1000.0) : elapsedS;
    double trainS = JobFollower.trainingSeconds(passes);
    return String.format(
        Locale.ROOT,
        "time: %.1f s starting (until the first pass began), %.1f s training, %.1f s evaluating"
            + " and reporting; %.1f s in all",
        startS,
        trainS,
        Math.max(0, elapsedS - startS - trainS),
        elapsedS);
  }

  /**
   * What to tell the user of {@code --trainers 0}: the masters' gRPC addresses (the job waits for
   * trainers of their own, which need no etcd: they join through the master) and the data.
   */
  static String externalTrainers(LocalCluster cluster, RunOptions o) {
    List<String> masters =
        cluster.processes().stream()
            .filter(p -> p.role() == Role.MASTER && p.grpcPort() > 0)
            .map(p -> "127.0.0.1:" + p.grpcPort())
            .toList();
    return "no trainers (--trainers 0): the job waits for yours; masters "
        + String.join(",", masters)
        + ", training data "
        + absoluteGlob(o.trainGlob())
        + ", test data "
        + absoluteGlob(o.testGlob())
        + " (for example examples/python/train_mlp.py --cluster "
        + cluster.clusterFile()
        + ")";
  }

  /** A trainer property {@code paramserver.trainer.<key>}, when its option was given. */
  private static void optional(ClusterSpec.Builder b, String key, String value) {
    if (value != null) {
      b.property(Role.TRAINER, "paramserver.trainer." + key, value);
    }
  }

  /**
   * Checks, before anything starts, that the training and test globs match files and that the
   * warm-start model exists (URIs such as s3://... are left to the services).
   *
   * @throws RunOptions.UsageException naming the option and the glob
   */
  static void checkInputs(RunOptions o) {
    checkGlob("--train", o.trainGlob());
    checkGlob("--test", o.testGlob());
    if (o.initFrom != null
        && !o.initFrom.contains("://")
        && !Files.isRegularFile(Path.of(o.initFrom))) {
      throw new RunOptions.UsageException(
          "--init-from " + o.initFrom + ": no such file (give a model file such as model.pb)");
    }
  }

  private static void checkGlob(String option, String glob) {
    if (glob == null || glob.contains("://")) {
      return;
    }
    try {
      RecordIndex.expandGlobs(List.of(absoluteGlob(glob)));
    } catch (IOException e) {
      throw new RunOptions.UsageException(
          option
              + " '"
              + glob
              + "': no file matches"
              + (Path.of(glob).isAbsolute()
                  ? ""
                  : " (relative to " + Path.of("").toAbsolutePath() + ")"));
    }
  }

  /** Services run in the run folder, so a relative glob is made absolute here. */
  static String absoluteGlob(String glob) {
    if (glob.regionMatches(true, 0, "s3:", 0, 3)) {
      return glob; // an object-store URI, passed on as it is
    }
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
    long t = System.nanoTime();
    boolean recording = InRunRecordings.recording(cluster.spec());
    if (recording) {
      out.println("writing the start-up caches of this build for the next run (once)...");
      InRunRecordings.stopRecorders(cluster);
    }
    cluster.close();
    if (recording) {
      List<Role> ready = InRunRecordings.finish(cluster.spec());
      out.println(String.format(Locale.ROOT, "start-up caches %s in %.1f s", ready, seconds(t)));
    }
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
}
