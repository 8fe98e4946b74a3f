package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.JfrSummary;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.train.Rounds.Paired;
import dev.paramserver.bench.train.Rounds.Run;
import dev.paramserver.bench.train.Rounds.Shape;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * Training throughput of three workloads ({@link Workload}: the demo softmax, a dense MLP of 5M
 * parameters, a click-through model over 10M sparse ids), each trained by one JVM with no RPC and
 * by 1 + 1, 2 + 2 and 4 + 4 processes (pservers + trainers) on the same data for the same passes,
 * with the same batch size and plain SGD. Two rates each, against the single JVM measured the same
 * way:
 *
 * <ul>
 *   <li><b>steady state</b>: the records of the tasks the master counted finished from the end of
 *       an unmeasured warm-up pass (pass 0: class loading, the JIT compiling the RPC and training
 *       paths of every process) to the end of the last pass, over the wall time between them
 *       ({@link Yardstick}; the single JVM: its passes after the first over their time), so that
 *       the figure is the rate a long job trains at; the old figure (second half of the passes over
 *       the sum of their durations, which overlap) stays one release as {@code
 *       ..._pass_duration_rate};
 *   <li><b>whole job</b>: all records of all passes / seconds from launching the processes (the
 *       single JVM's too: it runs in a JVM of its own) to the end of the last pass: what a user
 *       waits for.
 * </ul>
 *
 * <p>Plus the start-up of each distributed job: seconds from launch (etcd, the first process) until
 * the master hands out the first task ({@link FirstTaskWatch}).
 *
 * <p>The baseline and the distributed jobs run interleaved in {@value #ROUNDS} rounds ({@link
 * Rounds}: 1 + 1, the single JVM, 2 + 2), each round's ratios against that round's baseline, and
 * every figure reported is the median of the rounds; 4 + 4 runs once, at the end of the last round,
 * against that round's baseline. {@code --quick} runs the softmax only: 1 + 1 in the {@value
 * #ROUNDS} rounds and 2 + 2 once, right after the last round's baseline (three rounds of it would
 * take the quick run past 5 minutes: the start-up of a job is most of its time). {@code
 * --workloads} picks the workloads by name ({@link #WORKLOADS}; default {@link #DEFAULT_WORKLOADS},
 * or the softmax alone with {@code --quick}), each on the setups above ({@code --quick}'s with it),
 * except {@code ctr100m}, click-through at scale, run only when named, and once ({@link
 * SparseScaleRun}: a 1 + 1 job and a single JVM, about 6 minutes). With {@code --profile}, the
 * softmax 1 + 1 job of the last round records JFR of its pserver and trainer over the measured
 * passes (which slows them: that round's figures are then not comparable).
 */
public final class TrainSuite {
  /** The workloads {@code --workloads} may name, in the order they run. */
  public static final List<String> WORKLOADS = Workload.NAMES;

  /** The workloads of a full run (without {@code --workloads} or {@code --quick}). */
  static final List<String> DEFAULT_WORKLOADS = List.of("softmax", "mlp5m", "ctr");

  /** Rounds of each repeated setup and its baseline. */
  static final int ROUNDS = 3;

  private static final Shape ONE = new Shape(1, 1);
  private static final Shape TWO = new Shape(2, 2);
  private static final Shape FOUR = new Shape(4, 4);

  private final Path runDir;
  private final boolean quick;
  private final boolean profile;
  private final DistributedJob jobs;
  // the setups run in every round (1 + 1 first), and those run once, in the last
  private final List<Shape> repeated;
  private final List<Shape> once;
  private final List<String> workloads;

  /**
   * @param workloads the names of the workloads to run (of {@link #WORKLOADS}, run in that order),
   *     or null for the default: all, or the softmax alone when {@code quick}
   */
  public TrainSuite(
      Path runDir, ServiceJars jars, boolean quick, boolean profile, Collection<String> workloads) {
    this.runDir = runDir;
    this.quick = quick;
    this.profile = profile;
    this.jobs = new DistributedJob(runDir, jars);
    this.repeated = quick ? List.of(ONE) : List.of(ONE, TWO);
    this.once = quick ? List.of(TWO) : List.of(FOUR);
    this.workloads = selected(workloads, quick);
  }

  /**
   * The names {@code --workloads} selected, in the order of {@link #WORKLOADS}; null selects the
   * default.
   *
   * @throws IllegalArgumentException naming an unknown workload
   */
  public static List<String> selected(Collection<String> names, boolean quick) {
    if (names == null) {
      return quick ? List.of("softmax") : DEFAULT_WORKLOADS;
    }
    for (String n : names) {
      if (!WORKLOADS.contains(n)) {
        throw new IllegalArgumentException(
            "unknown training workload '" + n + "': pick from " + String.join(",", WORKLOADS));
      }
    }
    return WORKLOADS.stream().filter(names::contains).toList();
  }

  /**
   * The first pass of the old steady figure ({@link Outcome#passDurationRate}): the passes before
   * it were its warm-up.
   */
  static int firstSteadyPass(int passes) {
    return Math.max(1, passes / 2);
  }

  /** A distributed run's steady rate against its round's single JVM. */
  static double steadyRatio(Paired<Outcome> p) {
    return p.job().steady() / p.single().steady();
  }

  /** A distributed run's whole-job rate against its round's single JVM. */
  static double wholeJobRatio(Paired<Outcome> p) {
    return p.job().wholeJob() / p.single().wholeJob();
  }

  /** The median over {@code runs} of {@code f}. */
  static <T> double median(List<T> runs, ToDoubleFunction<T> f) {
    return Rounds.median(runs.stream().mapToDouble(f).toArray());
  }

  public void run(Report report) throws Exception {
    Path data = runDir.resolve("train").resolve("data");
    List<Workload> selected = new ArrayList<>();
    for (String name : workloads) {
      selected.add(Workload.named(name, data, quick));
    }
    Report.Table t =
        report.table(
            "Training",
            "Samples per second, steady state (end of the warm-up pass to the last task, by wall time) and whole job (launch to"
                + " end of the last pass), each against one JVM measured the same way, and seconds"
                + " from launch to the first task; plain SGD, asynchronous. Medians of "
                + ROUNDS
                + " interleaved rounds ("
                + once.get(0)
                + ": one round), each ratio the median of the rounds'"
                + " ratios against their own round's single JVM",
            "workload",
            "setup",
            "steady samples/s",
            "steady vs single",
            "whole-job samples/s",
            "whole job vs single",
            "first task s",
            "pass 0 samples/s",
            "final accuracy or AUC");
    Report.Table byRound =
        report.table(
            "Training",
            "Each round ("
                + repeated.get(0)
                + ", single JVM"
                + (repeated.size() > 1 ? ", " + repeated.get(1) : "")
                + "; "
                + once.get(0)
                + " after the last) against its own single JVM",
            "workload",
            "setup",
            "round",
            "steady samples/s",
            "single steady",
            "steady vs single",
            "whole-job samples/s",
            "single whole job",
            "whole job vs single",
            "first task s",
            "final accuracy or AUC");
    Map<String, Object> json = new LinkedHashMap<>();
    DistributedJob.Observation observed = new DistributedJob.Observation(profile);
    for (Workload w : selected) {
      System.out.printf(Locale.ROOT, "train %s: %s%n", w.name(), w.title());
      if (w.name().equals("ctr100m")) {
        new SparseScaleRun(jobs).run(report, w);
        continue;
      }
      Map<Shape, List<Paired<Outcome>>> paired = measure(w, observed);
      List<Outcome> singles = new ArrayList<>();
      paired.get(ONE).forEach(p -> singles.add(p.single()));
      t.row(
          w.title(),
          "single JVM, no RPC",
          median(singles, Outcome::steady),
          1.0,
          median(singles, Outcome::wholeJob),
          1.0,
          Double.NaN,
          median(singles, Outcome::pass0),
          median(singles, Outcome::quality));
      json.put(w.name() + ".single", singles);
      paired.forEach(
          (shape, runs) -> {
            report(report, byRound, w, shape, runs);
            t.row(
                w.title(),
                shape.toString(),
                median(runs, p -> p.job().steady()),
                median(runs, TrainSuite::steadyRatio),
                median(runs, p -> p.job().wholeJob()),
                median(runs, TrainSuite::wholeJobRatio),
                median(runs, p -> p.job().firstTask()),
                median(runs, p -> p.job().pass0()),
                median(runs, p -> p.job().quality()));
            json.put(w.name() + "." + shape.id(), runs);
          });
      CostReport.report(report, w, paired, singles);
      json.put(w.name() + ".costs", CostReport.json(paired, singles));
      if (w.name().equals("softmax")) {
        StartupSuite.timelineTable(
            report, "Training", paired.get(ONE).stream().map(Paired::job).toList());
      }
    }
    report.extra("training", json);
    if (workloads.contains("softmax")) {
      reportObservation(report, observed);
    }
  }

  /**
   * Runs the interleaved schedule of {@code w} and pairs each distributed run with its round's
   * baseline, printing each run as it ends.
   */
  private Map<Shape, List<Paired<Outcome>>> measure(Workload w, DistributedJob.Observation observed)
      throws Exception {
    List<Run> schedule = Rounds.schedule(repeated, once, ROUNDS);
    Map<Run, Outcome> results = new LinkedHashMap<>();
    for (Run run : schedule) {
      String where = "round " + (run.round() + 1) + "/" + ROUNDS;
      if (run.baseline()) {
        Outcome s = SingleJvmJob.run(w);
        results.put(run, s);
        System.out.printf(
            Locale.ROOT,
            "train %s single JVM, %s: steady %.0f samples/s, whole job %.0f, %s %.4f%n",
            w.name(),
            where,
            s.steady(),
            s.wholeJob(),
            w.metric(),
            s.quality());
        System.out.printf(Locale.ROOT, "  %s%n", CostReport.line(s));
        continue;
      }
      // the softmax 1 + 1 job of the last round is the observed one
      boolean observe =
          w.name().equals("softmax") && run.shape().equals(ONE) && run.round() == ROUNDS - 1;
      Outcome d = jobs.run(w, run.shape(), run.round(), observe ? observed : null);
      results.put(run, d);
      System.out.printf(
          Locale.ROOT,
          "train %s %s, %s: steady %.0f samples/s, whole job %.0f, first task after %.2f s (at"
              + " most %.3f s late), %s %.4f%n",
          w.name(),
          run.shape().id(),
          where,
          d.steady(),
          d.wholeJob(),
          d.firstTask(),
          d.firstTaskSlack(),
          w.metric(),
          d.quality());
      System.out.printf(Locale.ROOT, "  %s%n", CostReport.line(d));
    }
    return Rounds.pair(results);
  }

  /** The ratio lines of one setup, and its rounds and medians on the console. */
  private static void report(
      Report report, Report.Table byRound, Workload w, Shape shape, List<Paired<Outcome>> runs) {
    String pxt = shape.id();
    double steady = median(runs, TrainSuite::steadyRatio);
    double whole = median(runs, TrainSuite::wholeJobRatio);
    double firstTask = median(runs, p -> p.job().firstTask());
    String of = runs.size() == 1 ? "one round" : "median of " + runs.size() + " rounds";
    String baseline =
        w.name()
            + " in one JVM ("
            + of
            + "; its rounds' single JVM "
            + Report.fmt(median(runs, p -> p.single().steady()))
            + " samples/s steady, "
            + Report.fmt(median(runs, p -> p.single().wholeJob()))
            + " whole job; "
            + w.metric()
            + " "
            + Report.fmt(median(runs, p -> p.single().quality()))
            + " vs "
            + Report.fmt(median(runs, p -> p.job().quality()))
            + ")";
    report.ratio(
        "train_" + w.name() + "_" + pxt + "_vs_single_jvm",
        steady,
        steadyTarget(w.name(), shape.pservers()),
        baseline);
    report.ratio(
        "train_" + w.name() + "_" + pxt + "_whole_job_vs_single_jvm",
        whole,
        w.name().equals("softmax") && shape.pservers() == 1 ? Target.atLeast(0.5) : null,
        baseline);
    if (w.name().equals("softmax") && shape.pservers() <= 2) {
      // the names of earlier runs
      report.ratio("train_" + pxt + "_vs_single_jvm", steady, null, baseline);
    }
    if (w.name().equals("softmax") && shape.pservers() == 1) {
      report.ratio(
          "startup_first_task_1x1_s",
          firstTask,
          Target.atMost(6),
          "seconds from launching the softmax 1 + 1 job (etcd first) until the master handed out"
              + " its first task, "
              + of
              + " (seen in the master's status, polled every "
              + FirstTaskWatch.POLL.toMillis()
              + " ms: at most one poll and one status call late; slack "
              + Report.fmt(median(runs, p -> p.job().firstTaskSlack()))
              + " s)");
    }
    for (Paired<Outcome> p : runs) {
      Outcome d = p.job();
      Object[] figures = {
        d.steady(),
        p.single().steady(),
        steadyRatio(p),
        d.wholeJob(),
        p.single().wholeJob(),
        wholeJobRatio(p),
        d.firstTask(),
        d.quality()
      };
      List<Object> cells = new ArrayList<>(List.of(w.title(), shape.toString(), p.round() + 1L));
      cells.addAll(Arrays.asList(figures));
      byRound.row(cells.toArray());
      System.out.printf(
          Locale.ROOT,
          "train %s %s round %d: %s (single JVM %.4f)%n",
          w.name(),
          pxt,
          p.round() + 1,
          String.format(
              Locale.ROOT,
              "steady %.0f vs %.0f samples/s = %.3f, whole job %.0f vs %.0f = %.3f, first task %.2f"
                  + " s, "
                  + w.metric()
                  + " %.4f",
              figures),
          p.single().quality());
    }
    System.out.printf(
        Locale.ROOT,
        "train %s %s %s: steady %.3f, whole job %.3f, first task %.2f s%n",
        w.name(),
        pxt,
        of,
        steady,
        whole,
        firstTask);
  }

  /** The steady-state targets of the performance issue. */
  private static Target steadyTarget(String workload, int pservers) {
    if (pservers > 2) {
      return null;
    }
    return switch (workload) {
      case "softmax" -> pservers == 1 ? Target.atLeast(0.6) : null;
      case "mlp5m" -> pservers == 2 ? Target.atLeast(1.2) : null;
      case "ctr" -> Target.atLeast(0.5);
      default -> null;
    };
  }

  /** The observed job's RPC times and, with --profile, its JFR summaries. */
  private static void reportObservation(Report report, DistributedJob.Observation observed) {
    Report.Table rpc =
        report.table(
            "Training",
            "Where the softmax 1 + 1 job's time goes (round "
                + ROUNDS
                + "): server-side time per RPC method over the whole job, and the first trainer's push"
                + " round trips (all passes: "
                + Report.fmt(observed.jobMillis / 1000.0)
                + " s of passes)",
            "service",
            "method",
            "calls",
            "total s",
            "mean ms");
    observed.rpcTimes.forEach(
        (svc, m) ->
            m.forEach(
                (method, tm) ->
                    rpc.row(
                        svc,
                        method,
                        (long) tm.calls(),
                        tm.seconds(),
                        tm.calls() == 0 ? Double.NaN : 1000 * tm.seconds() / tm.calls())));
    String[] who = {"pserver", "trainer"};
    for (int i = 0; i < observed.profiles.size(); i++) {
      Path f = observed.profiles.get(i);
      try {
        JfrSummary js = JfrSummary.read(f);
        for (String l :
            js.markdown(who[i] + " process, softmax 1 + 1, the measured passes (JFR)")) {
          report.note("Profile", l);
        }
        report.extra(who[i] + "TrainingProfile", js.json());
      } catch (Exception e) {
        report.note("Profile", who[i] + " recording " + f + " unreadable: " + e);
      }
    }
  }
}
