package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.train.Rounds.Shape;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The click-through workload ({@link Workload#ctr}) trained by a Python trainer ({@code
 * examples/python/train_ctr.py --model sparse-lr}: the Java sparse-lr in PyTorch, with the same
 * tables, initialisation, plain SGD, learning rate and batch size) against the Java trainer, each
 * on a 1 + 1 job (etcd, a master, a pserver) over the same data. {@value TrainSuite#ROUNDS} rounds,
 * the two jobs interleaved (the Java job first in odd rounds, the Python job first in even ones);
 * the ratios are the medians of the rounds': {@code python_ctr_samples_vs_java} (steady samples per
 * second, target at least 0.5) and {@code python_ctr_auc_minus_java} (test AUC after the last pass,
 * target at least -0.005).
 */
final class PythonCtr {
  private static final Shape ONE = new Shape(1, 1);

  private final PythonSuite suite;
  private final String python;
  private final DistributedJob java;

  PythonCtr(PythonSuite suite, String python, ServiceJars jars, Path runDir) {
    this.suite = suite;
    this.python = python;
    this.java = new DistributedJob(runDir, jars);
  }

  /** Runs the rounds, adds the tables and ratios to {@code report}; returns the rounds' figures. */
  List<Map<String, Object>> run(Report report, Path data, boolean quick) throws Exception {
    Workload w = Workload.ctr(data, quick);
    System.out.printf(Locale.ROOT, "python ctr: %s (%s)%n", w.title(), python);
    List<String> args =
        List.of(
            "--model",
            "sparse-lr",
            "--embedding-width",
            Integer.toString(w.spec().embeddingWidth()),
            "--lr",
            Float.toString(w.lr()),
            "--batch-size",
            Integer.toString(w.batch()),
            "--data",
            w.trainGlob(),
            "--test-data",
            w.testGlob());
    Report.Table byRound =
        report.table(
            "Python trainer",
            "Click-through sparse-lr, Python trainer against the Java trainer (1 + 1 each, same"
                + " data, tables, SGD and batch), each round",
            "round",
            "Python samples/s",
            "Java samples/s",
            "ratio",
            "Python AUC",
            "Java AUC",
            "AUC difference");
    List<Double> ratios = new ArrayList<>();
    List<Double> aucs = new ArrayList<>();
    List<Double> py = new ArrayList<>();
    List<Double> jv = new ArrayList<>();
    List<Map<String, Object>> rounds = new ArrayList<>();
    for (int r = 0; r < TrainSuite.ROUNDS; r++) {
      Outcome p;
      Outcome j;
      if (r % 2 == 0) {
        j = javaJob(w, r);
        p = suite.job(w, r, "train_ctr.py", args);
      } else {
        p = suite.job(w, r, "train_ctr.py", args);
        j = javaJob(w, r);
      }
      System.out.printf(
          Locale.ROOT,
          "python ctr round %d/%d: Python %.0f samples/s auc %.4f, Java %.0f samples/s auc %.4f%n",
          r + 1,
          TrainSuite.ROUNDS,
          p.steady(),
          p.quality(),
          j.steady(),
          j.quality());
      ratios.add(p.steady() / j.steady());
      aucs.add(p.quality() - j.quality());
      py.add(p.steady());
      jv.add(j.steady());
      byRound.row(
          r + 1L,
          p.steady(),
          j.steady(),
          p.steady() / j.steady(),
          p.quality(),
          j.quality(),
          p.quality() - j.quality());
      Map<String, Object> round = new LinkedHashMap<>();
      round.put("python", p);
      round.put("java", j);
      rounds.add(round);
    }
    String figures =
        "ctr sparse-lr 1 + 1, Python trainer vs Java trainer (median of "
            + TrainSuite.ROUNDS
            + " interleaved rounds; "
            + Report.fmt(Rounds.median(py))
            + " vs "
            + Report.fmt(Rounds.median(jv))
            + " samples/s)";
    report.ratio("python_ctr_samples_vs_java", Rounds.median(ratios), Target.atLeast(0.5), figures);
    report.ratio("python_ctr_auc_minus_java", Rounds.median(aucs), Target.atLeast(-0.005), figures);
    System.out.printf(
        Locale.ROOT,
        "python ctr median: samples ratio %.3f, auc difference %.4f%n",
        Rounds.median(ratios),
        Rounds.median(aucs));
    return rounds;
  }

  private Outcome javaJob(Workload w, int round) throws Exception {
    return java.run(w, ONE, "java-vs-python-round" + (round + 1), Map.of(), null);
  }
}
