package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.CheckpointDirs;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.train.Rounds.Paired;
import dev.paramserver.bench.train.Rounds.Run;
import dev.paramserver.bench.train.Rounds.Shape;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The Python trainer ({@code clients/python}, run as {@code examples/python/train_mlp.py}) against
 * PyTorch training the same module in one process ({@code examples/python/train_single.py}): the
 * same MLP ({@code paramserver.torch.models.MLP}, same seed and initialisation), loss, batch size,
 * plain SGD and data. The distributed job is etcd, a master and one pserver of the services' jars
 * with no Java trainer, and one Python trainer process joining through the master (1 + 1); its
 * samples per second are the master's steady state (the second half of the passes, as {@link
 * TrainSuite}); the baseline times its passes the same way. {@value TrainSuite#ROUNDS} interleaved
 * rounds (the job, then the baseline), each ratio the median of the rounds' ratios. Workloads: the
 * training section's 5M-parameter MLP ({@link Workload#mlp5m}, the headline {@code
 * python_mlp_1x1_vs_torch}) and the demo MLP of {@code docs/how-to/python.md} ({@link
 * Workload#smallMlp}; skipped with {@code --quick}). Also reports the Python client's hand-written
 * lines ({@code clients/python/paramserver/**.py} without the generated {@code v1/}).
 *
 * <p>The interpreter is {@code $PYTHON} or {@code /usr/bin/python3} (torch, numpy, grpcio).
 */
public final class PythonSuite {
  private static final Shape ONE = new Shape(1, 1);

  private final Path repo;
  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;
  private final String python;
  private final List<String> workloads;

  /**
   * @param workloads the workloads to run among {@code mlp5m} and {@code ctr} ({@code --workloads};
   *     null: all, with the demo MLP unless {@code quick})
   */
  public PythonSuite(
      Path repo, Path runDir, ServiceJars jars, boolean quick, List<String> workloads) {
    this.repo = repo;
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
    this.workloads = workloads;
    String env = System.getenv("PYTHON");
    this.python = env != null && !env.isBlank() ? env : "/usr/bin/python3";
  }

  public void run(Report report) throws Exception {
    Path data = runDir.resolve("python").resolve("data");
    List<Workload> workloads = new ArrayList<>();
    if (this.workloads == null || this.workloads.contains("mlp5m")) {
      workloads.add(Workload.mlp5m(data));
    }
    if (this.workloads == null && !quick) {
      workloads.add(Workload.smallMlp(data, false));
    }
    Map<String, Object> json = new LinkedHashMap<>();
    if (!workloads.isEmpty()) {
      mlp(report, workloads, json);
    }
    if (this.workloads == null || this.workloads.contains("ctr")) {
      json.put("ctr", new PythonCtr(this, python, jars, runDir).run(report, data, quick));
    }
    long lines = clientLines(repo.resolve("clients/python/paramserver"));
    report.ratio(
        "python_client_lines",
        lines,
        Target.atMost(800),
        "hand-written lines of clients/python/paramserver/**.py (without the generated v1/)");
    json.put("clientLines", lines);
    report.extra("python", json);
  }

  /** The MLP workloads: the Python trainer against PyTorch in one process. */
  private void mlp(Report report, List<Workload> workloads, Map<String, Object> json)
      throws Exception {
    Report.Table t =
        report.table(
            "Python trainer",
            "A Python trainer (1 pserver + 1 Python trainer process, through the master) against"
                + " PyTorch training the same module in one process, steady-state samples per"
                + " second (second half of the passes), plain SGD; medians of "
                + TrainSuite.ROUNDS
                + " interleaved rounds, the ratio the median of the rounds' ratios",
            "workload",
            "Python 1 + 1 samples/s",
            "PyTorch one process samples/s",
            "1 + 1 vs one process",
            "Python 1 + 1 accuracy",
            "one process accuracy");
    Report.Table byRound =
        report.table(
            "Python trainer",
            "Each round (the 1 + 1 job, then the one-process baseline)",
            "workload",
            "round",
            "Python 1 + 1 samples/s",
            "one process samples/s",
            "ratio",
            "Python 1 + 1 accuracy",
            "one process accuracy");
    for (Workload w : workloads) {
      System.out.printf(Locale.ROOT, "python %s: %s%n", w.name(), w.title());
      List<Paired<Outcome>> runs = measure(w).get(ONE);
      double ratio = TrainSuite.median(runs, TrainSuite::steadyRatio);
      for (Paired<Outcome> p : runs) {
        byRound.row(
            w.title(),
            p.round() + 1L,
            p.job().steady(),
            p.single().steady(),
            TrainSuite.steadyRatio(p),
            p.job().quality(),
            p.single().quality());
      }
      t.row(
          w.title(),
          TrainSuite.median(runs, p -> p.job().steady()),
          TrainSuite.median(runs, p -> p.single().steady()),
          ratio,
          TrainSuite.median(runs, p -> p.job().quality()),
          TrainSuite.median(runs, p -> p.single().quality()));
      String name = w.name().equals("mlp5m") ? "python_mlp_1x1_vs_torch" : "python_" + w.name();
      report.ratio(
          name.endsWith("_torch") ? name : name + "_1x1_vs_torch",
          ratio,
          w.name().equals("mlp5m") ? Target.atLeast(0.7) : null,
          w.name()
              + ": Python trainer 1 + 1 vs PyTorch in one process (median of "
              + runs.size()
              + " rounds; "
              + Report.fmt(TrainSuite.median(runs, p -> p.job().steady()))
              + " vs "
              + Report.fmt(TrainSuite.median(runs, p -> p.single().steady()))
              + " samples/s; accuracy "
              + Report.fmt(TrainSuite.median(runs, p -> p.job().quality()))
              + " vs "
              + Report.fmt(TrainSuite.median(runs, p -> p.single().quality()))
              + ")");
      json.put(w.name(), runs);
      System.out.printf(Locale.ROOT, "python %s median ratio %.3f%n", w.name(), ratio);
    }
  }

  /** Lines of the client's .py files, without the generated stubs. */
  static long clientLines(Path dir) throws IOException {
    long n = 0;
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f :
          files
              .filter(f -> f.toString().endsWith(".py"))
              .filter(f -> !dir.relativize(f).startsWith("v1"))
              .toList()) {
        n += Files.readAllLines(f).size();
      }
    }
    return n;
  }

  private Map<Shape, List<Paired<Outcome>>> measure(Workload w) throws Exception {
    Map<Run, Outcome> results = new LinkedHashMap<>();
    for (Run run : Rounds.schedule(List.of(ONE), List.of(), TrainSuite.ROUNDS)) {
      String where = "round " + (run.round() + 1) + "/" + TrainSuite.ROUNDS;
      Outcome o = run.baseline() ? single(w) : job(w, run.round(), "train_mlp.py", modelArgs(w));
      results.put(run, o);
      System.out.printf(
          Locale.ROOT,
          "python %s %s, %s: steady %.0f samples/s, per pass %s, %s %.4f%n",
          w.name(),
          run.baseline() ? "PyTorch one process" : "1 + 1",
          where,
          o.steady(),
          o.perPass().stream().map(v -> String.format(Locale.ROOT, "%.0f", v)).toList(),
          w.metric(),
          o.quality());
    }
    return Rounds.pair(results);
  }

  private List<String> modelArgs(Workload w) {
    List<String> a = new ArrayList<>();
    if (!w.spec().hidden().isEmpty()) {
      a.add("--hidden");
      a.add(String.join(",", w.spec().hidden().stream().map(String::valueOf).toList()));
    }
    a.addAll(dataArgs(w, "--test"));
    return a;
  }

  /**
   * The options the examples share for {@code w}: its SGD learning rate, batch size and training
   * data, and its test data after {@code testOption} ({@code train_mlp.py}'s {@code --test}, {@code
   * train_ctr.py}'s {@code --test-data}).
   */
  static List<String> dataArgs(Workload w, String testOption) {
    return List.of(
        "--lr",
        Float.toString(w.lr()),
        "--batch-size",
        Integer.toString(w.batch()),
        "--data",
        w.trainGlob(),
        testOption,
        w.testGlob());
  }

  private Outcome single(Workload w) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(python, script("train_single.py")));
    cmd.addAll(modelArgs(w));
    cmd.addAll(List.of("--passes", Integer.toString(w.passes())));
    return SingleJvmJob.run(w, cmd, "the one-process PyTorch trainer");
  }

  String script(String name) {
    return repo.resolve("examples/python").resolve(name).toString();
  }

  /**
   * A 1 + 1 job of {@code w} (etcd, a master, a pserver, no Java trainer) trained by {@code
   * examples/python/<trainer>} with {@code args} after its {@code --master}.
   */
  Outcome job(Workload w, int round, String trainer, List<String> args) throws Exception {
    Path dir = runDir.resolve("python").resolve(w.name() + "-1x1-round" + (round + 1));
    ClusterSpec spec =
        jars.spec(dir)
            .job("bench-python-" + w.name())
            .masters(1)
            .pservers(1)
            .trainers(0)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(w.passes()))
            .property(
                Role.MASTER,
                "paramserver.master.chunks-per-task",
                Integer.toString(w.chunksPerTask()))
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(240))
            .build();
    LocalCluster.prepareClassData(spec);
    long launchedMs = System.currentTimeMillis();
    long launchedNanos = System.nanoTime();
    try (LocalCluster cluster = new LocalCluster(spec);
        FirstTaskWatch firstTask = FirstTaskWatch.start(cluster, launchedNanos);
        WarmupWatch warmup = WarmupWatch.start(cluster, null)) {
      cluster.start();
      List<String> cmd =
          new ArrayList<>(
              List.of(
                  python,
                  script(trainer),
                  "--master",
                  "127.0.0.1:" + cluster.process(Role.MASTER, 0).grpcPort()));
      cmd.addAll(args);
      Path log = dir.resolve("python-trainer.log");
      Process p =
          new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      try {
        if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
          throw new IllegalStateException(
              "the Python trainer of " + w.name() + " failed; its log: " + log);
        }
      } finally {
        p.destroyForcibly();
      }
      JobStatusView end = DistributedJob.awaitEvaluatedEnd(cluster, w);
      if (!end.isFinished()) {
        throw new IllegalStateException("python job " + w.name() + " did not finish: " + end);
      }
      firstTask.close();
      Map<String, ServerRpcTimes.Times> rpc =
          ServerRpcTimes.scrape(cluster.process(Role.PSERVER, 0).httpPort());
      rpc.forEach(
          (m, tm) ->
              System.out.printf(
                  Locale.ROOT,
                  "  pserver %s: %d calls, %.3f s, %.2f ms each%n",
                  m,
                  (long) tm.calls(),
                  tm.seconds(),
                  tm.calls() == 0 ? Double.NaN : 1000 * tm.seconds() / tm.calls()));
      warmup.close();
      Yardstick.Window window = Yardstick.of(end, warmup.mark(), launchedMs, launchedNanos);
      return DistributedJob.outcome(
          w,
          end,
          launchedMs,
          firstTask,
          Map.of(),
          window,
          Map.of(
              "window_seconds",
              window.seconds(),
              "window_records",
              (double) window.records(),
              "window_ahead_records",
              (double) window.aheadRecords()));
    } finally {
      CheckpointDirs.drop(dir);
    }
  }
}
