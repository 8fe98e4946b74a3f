package dev.paramserver.bench.train;

import dev.paramserver.bench.cpu.CapacityModel;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.train.Rounds.Paired;
import dev.paramserver.bench.train.Rounds.Shape;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The training section's cost figures of a workload (docs/explanation/performance.md): the old
 * pass-duration rate kept for one release, the CPU each role spent per sample in the measured
 * window against one JVM's, the training thread's run, run-queue wait and blocked shares, and the
 * capacity model ({@link CapacityModel}) fed with the 1 + 1 job's costs: its prediction for N
 * trainers and M pservers on nodes of their own, and its error against this machine's own 1 + 1 and
 * 2 + 2 measurements.
 */
final class CostReport {
  /** The roles of the CPU table, in its order. */
  private static final List<String> ROLES =
      List.of("trainer", "pserver", "master", "etcd", "supervisor", "all");

  /** The setups the capacity model predicts (trainers x pservers). */
  static final List<Shape> PREDICTED =
      List.of(new Shape(1, 1), new Shape(2, 2), new Shape(4, 4), new Shape(8, 8));

  /**
   * Component figures other sections report as ratios before the training section, by workload:
   * {@code component_trainer_thread_us_per_batch_<workload>} (the training thread's CPU-µs per
   * batch against an in-process pserver) and {@code component_pserver_push_row_ns_<workload>} (the
   * pserver's ns per pushed row in process). Absent: the model uses the job's own per-role CPU.
   */
  static final String TRAINER_COMPONENT = "component_trainer_thread_us_per_batch_";

  static final String PSERVER_COMPONENT = "component_pserver_push_row_ns_";

  private CostReport() {}

  /** One run's window and CPU in a line for the console. */
  static String line(Outcome o) {
    if (o.window().isEmpty()) {
      return "no measured window";
    }
    return String.format(
        Locale.ROOT,
        "window %.2f s, %.0f records (%.0f done ahead at its start); CPU %.1f us/sample (%.1f"
            + " without the JIT; trainer %.1f, pserver %.1f), %.2f cores busy; training thread on"
            + " a CPU %.0f %%, waiting for one %.0f %%, blocked %.0f %%",
        o.window("window_seconds"),
        o.window("window_records"),
        o.window("window_ahead_records"),
        o.window("all_cpu_us_per_sample"),
        o.window("all_cpu_us_per_sample_no_jit"),
        o.window("trainer_cpu_us_per_sample"),
        o.window("pserver_cpu_us_per_sample"),
        o.window("all_cores"),
        100 * o.window("train_thread_run_share"),
        100 * o.window("train_thread_wait_share"),
        100 * o.window("train_thread_blocked_share"));
  }

  /** The figures of {@code runs}, each the median over the runs that have it. */
  static Map<String, Double> medians(List<Outcome> runs) {
    Map<String, Double> out = new TreeMap<>();
    TreeSet<String> keys = new TreeSet<>();
    runs.forEach(o -> keys.addAll(o.window().keySet()));
    for (String k : keys) {
      out.put(k, TrainSuite.median(runs, o -> o.window(k)));
    }
    return out;
  }

  /** The cost ratios and tables of workload {@code w}. */
  static void report(
      Report report, Workload w, Map<Shape, List<Paired<Outcome>>> paired, List<Outcome> singles) {
    Report.Table cpu =
        report.table(
            "Training",
            w.title()
                + ": CPU per sample in the measured window (end of the warm-up pass to the last"
                + " task), per role, without the sampling JVM's own roles in 'all'; medians of the"
                + " rounds",
            "setup",
            "role",
            "CPU-us/sample",
            "cores busy",
            "JIT share",
            "GC share",
            "gRPC loop share");
    Map<String, Double> single = medians(singles);
    cpu.row(
        "single JVM",
        "single",
        single.getOrDefault("single_cpu_us_per_sample", Double.NaN),
        single.getOrDefault("single_cores", Double.NaN),
        single.getOrDefault("single_jit_share", Double.NaN),
        single.getOrDefault("single_gc_share", Double.NaN),
        Double.NaN);
    Report.Table thread =
        report.table(
            "Training",
            w.title()
                + ": the training thread in the measured window (shares of its wall time: on a"
                + " CPU, runnable but waiting for one, blocked on answers, pulls or tasks); medians"
                + " of the rounds",
            "setup",
            "window s",
            "records ahead at start",
            "on CPU",
            "run-queue wait",
            "blocked",
            "us per slice");
    thread.row(
        "single JVM",
        single.getOrDefault("window_seconds", Double.NaN),
        0L,
        single.getOrDefault("train_thread_run_share", Double.NaN),
        single.getOrDefault("train_thread_wait_share", Double.NaN),
        single.getOrDefault("train_thread_blocked_share", Double.NaN),
        single.getOrDefault("train_thread_us_per_slice", Double.NaN));
    paired.forEach(
        (shape, runs) -> {
          String pxt = shape.id();
          List<Outcome> jobs = runs.stream().map(Paired::job).toList();
          Map<String, Double> m = medians(jobs);
          for (String role : ROLES) {
            if (m.containsKey(role + "_cpu_us_per_sample")) {
              cpu.row(
                  shape.toString(),
                  role,
                  m.get(role + "_cpu_us_per_sample"),
                  m.get(role + "_cores"),
                  m.get(role + "_jit_share"),
                  m.getOrDefault(role + "_gc_share", Double.NaN),
                  m.getOrDefault(role + "_loop_share", Double.NaN));
            }
          }
          thread.row(
              shape.toString(),
              m.getOrDefault("window_seconds", Double.NaN),
              m.getOrDefault("window_ahead_records", Double.NaN),
              m.getOrDefault("train_thread_run_share", Double.NaN),
              m.getOrDefault("train_thread_wait_share", Double.NaN),
              m.getOrDefault("train_thread_blocked_share", Double.NaN),
              m.getOrDefault("train_thread_us_per_slice", Double.NaN));
          String of = runs.size() == 1 ? "one round" : "median of " + runs.size() + " rounds";
          report.ratio(
              "train_" + w.name() + "_" + pxt + "_vs_single_jvm_pass_duration_rate",
              TrainSuite.median(
                  runs, p -> p.job().passDurationRate() / p.single().passDurationRate()),
              null,
              "the old steady figure (records of the second half of the passes over the sum of"
                  + " their durations, which overlap), kept for one release; "
                  + of);
          report.ratio(
              "cpu_us_per_sample_" + w.name() + "_" + pxt + "_vs_single_jvm",
              TrainSuite.median(
                  runs,
                  p ->
                      p.job().window("all_cpu_us_per_sample_no_jit")
                          / p.single().window("all_cpu_us_per_sample_no_jit")),
              w.name().equals("ctr") && shape.pservers() == 1 ? Target.atMost(3.5) : null,
              "CPU-us per sample of every process of the job (etcd and the master included, the"
                  + " JIT not) over one JVM's, in the measured window; "
                  + of
                  + " (job "
                  + Report.fmt(m.getOrDefault("all_cpu_us_per_sample_no_jit", Double.NaN))
                  + ", one JVM "
                  + Report.fmt(single.getOrDefault("all_cpu_us_per_sample_no_jit", Double.NaN))
                  + ")");
        });
    capacity(report, w, paired, TrainSuite.median(singles, o -> o.sparse("rows_per_sample")));
  }

  /** The capacity model of {@code w} from its 1 + 1 job, checked against 1 + 1 and 2 + 2. */
  private static void capacity(
      Report report, Workload w, Map<Shape, List<Paired<Outcome>>> paired, double rowsPerSample) {
    List<Paired<Outcome>> one = paired.get(new Shape(1, 1));
    if (one == null) {
      return;
    }
    Map<String, Double> costs = medians(one.stream().map(Paired::job).toList());
    List<Paired<Outcome>> two = paired.get(new Shape(2, 2));
    if (two != null) {
      Double skew = medians(two.stream().map(Paired::job).toList()).get("pserver_cpu_skew");
      if (skew != null) {
        costs.put("pserver_cpu_skew", skew);
      }
    }
    CapacityModel.Components components = components(report, w, rowsPerSample);
    int lag = w.spec().embeddingWidth() > 0 ? 2 : 16;
    CapacityModel model;
    try {
      model = CapacityModel.of(costs, components, lag, w.batch());
    } catch (IllegalArgumentException e) {
      report.note("Training", w.name() + ": no capacity model: " + e.getMessage());
      return;
    }
    double singleRate = TrainSuite.median(one, p -> p.single().steady());
    Report.Table t =
        report.table(
            "Training",
            String.format(
                Locale.ROOT,
                "%s: the capacity model from the 1 + 1 job's costs (trainer %.1f, pserver %.1f,"
                    + " training thread %.1f, master %.2f CPU-us/sample without the JIT; %.0f bytes"
                    + " per sample; pserver skew %.2f; lag %d; %s), eta %.2f: N trainers and M"
                    + " pservers on %d-core nodes with 10 GbE, and this machine's %d cores less what other processes kept busy",
                w.title(),
                model.cTrainer() * 1e6,
                model.cPserver() * 1e6,
                model.cThread() * 1e6,
                model.cMaster() * 1e6,
                model.bytesPerSample(),
                model.skew(),
                lag,
                components.equals(CapacityModel.Components.NONE)
                    ? "no component figures"
                    : "component figures " + components,
                CapacityModel.ETA,
                CapacityModel.NODE_CORES,
                Runtime.getRuntime().availableProcessors()),
            "setup",
            "where",
            "predicted samples/s",
            "vs single JVM",
            "bound",
            "measured samples/s",
            "error");
    for (Shape s : PREDICTED) {
      CapacityModel.Prediction p =
          model.predict(
              s.trainers(), s.pservers(), CapacityModel.NODE_CORES, CapacityModel.TEN_GBE);
      String name = "capacity_" + w.name() + "_" + s.trainers() + "x" + s.pservers();
      report.ratio(
          name + "_vs_single_jvm",
          p.samplesPerSecond() / singleRate,
          w.name().equals("ctr") && s.pservers() == 4 ? Target.atLeast(2) : null,
          "predicted samples/s of "
              + s.trainers()
              + " trainers and "
              + s.pservers()
              + " pservers on "
              + CapacityModel.NODE_CORES
              + "-core nodes with 10 GbE ("
              + Report.fmt(p.samplesPerSecond())
              + ", bound: "
              + p.bound()
              + ") over one JVM here ("
              + Report.fmt(singleRate)
              + ")");
      t.row(
          s.toString(),
          "nodes",
          p.samplesPerSecond(),
          p.samplesPerSecond() / singleRate,
          p.bound().toString(),
          Double.NaN,
          Double.NaN);
    }
    int cores = Runtime.getRuntime().availableProcessors();
    paired.forEach(
        (shape, runs) -> {
          if (shape.pservers() > 2) {
            return;
          }
          // the cores left to the job: this machine's, less what other processes kept busy
          double other = TrainSuite.median(runs, r -> r.job().window("other_cores_busy"));
          double left = Double.isNaN(other) ? cores : Math.max(0.1, cores - other);
          CapacityModel.Prediction p = model.predictHere(shape.trainers(), shape.pservers(), left);
          double measured = TrainSuite.median(runs, r -> r.job().steady());
          double error = CapacityModel.error(p.samplesPerSecond(), measured);
          report.ratio(
              "capacity_model_error_" + w.name() + "_" + shape.id(),
              error,
              w.name().equals("ctr") && shape.pservers() == 1 ? Target.atMost(0.25) : null,
              "|predicted - measured| / measured on this machine ("
                  + cores
                  + " cores, "
                  + Report.fmt(left)
                  + " of them left to the job by other processes): predicted "
                  + Report.fmt(p.samplesPerSecond())
                  + " samples/s (bound "
                  + p.bound()
                  + ") from the 1 + 1 job's costs, measured "
                  + Report.fmt(measured));
          t.row(
              shape.toString(),
              "here",
              p.samplesPerSecond(),
              p.samplesPerSecond() / singleRate,
              p.bound().toString(),
              measured,
              error);
        });
  }

  /** The component figures of {@code w} other sections reported, or none. */
  private static CapacityModel.Components components(Report report, Workload w, double rows) {
    double trainer = Double.NaN;
    double pserver = Double.NaN;
    for (Report.Ratio r : report.ratios()) {
      if (r.name().equals(TRAINER_COMPONENT + w.name())) {
        trainer = r.value();
      } else if (r.name().equals(PSERVER_COMPONENT + w.name())) {
        pserver = r.value();
      }
    }
    if (Double.isNaN(trainer) && Double.isNaN(pserver)) {
      return CapacityModel.Components.NONE;
    }
    return new CapacityModel.Components(
        Double.isNaN(trainer) ? 0 : trainer,
        Double.isNaN(pserver) ? 0 : pserver,
        Double.isNaN(rows) ? 0 : rows);
  }

  /** The JSON of the costs: per setup, the medians of its runs' window figures. */
  static Map<String, Object> json(Map<Shape, List<Paired<Outcome>>> paired, List<Outcome> singles) {
    Map<String, Object> out = new TreeMap<>();
    out.put("single", medians(singles));
    paired.forEach(
        (shape, runs) ->
            out.put(shape.id(), medians(new ArrayList<>(runs.stream().map(Paired::job).toList()))));
    return out;
  }
}
