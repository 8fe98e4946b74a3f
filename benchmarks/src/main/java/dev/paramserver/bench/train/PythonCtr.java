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
 * examples/python/train_ctr.py --model sparse-lr}: the Java sparse-lr in PyTorch) against the Java
 * trainer, each on a 1 + 1 job (etcd, a master, a pserver) over the same data, as the same job: the
 * same tables and initial values (the seed {@value #SEED}: the dense {@code emb.out} drawn as the
 * Java trainer draws it, rows created by the pserver), plain SGD at the same learning rate, the
 * same batch size, passes and tasks, each task's records in the same order (the Python trainer
 * shuffles as the Java trainer does, with the same seed), the same row-cache staleness bound
 * ({@value #ROW_STALENESS} batches, the Java trainer's default) and the same test set evaluated
 * after the last pass. {@value TrainSuite#ROUNDS} rounds, the two jobs interleaved (the Java job
 * first in odd rounds, the Python job first in even ones); the ratios are the medians of the
 * rounds': {@code python_ctr_samples_vs_java} (steady samples per second, target at least 0.5) and
 * {@code python_ctr_auc_minus_java} (test AUC after the last pass, target within 0.005 either way).
 *
 * <p>Both AUCs are the last pass's ({@link DistributedJob#awaitEvaluatedEnd}): the Java job's
 * figure used to be read when the master finished the job, before the trainer had reported the last
 * pass's evaluation in some runs, and was then its second pass's (0.6951 against 0.7012).
 */
final class PythonCtr {
  private static final Shape ONE = new Shape(1, 1);

  /** The seed of both trainers (the Java trainer's default {@code paramserver.trainer.seed}). */
  static final long SEED = 42;

  /** The row-cache staleness bound of both trainers, batches (the Java trainer's default). */
  static final int ROW_STALENESS = 4;

  /** What the Java trainer is given besides the workload's model, optimizer and batch. */
  static final Map<String, String> JAVA_SETTINGS =
      Map.of("seed", Long.toString(SEED), "sparse.staleness", Integer.toString(ROW_STALENESS));

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
    List<String> args = new ArrayList<>();
    args.addAll(
        List.of(
            "--model",
            "sparse-lr",
            "--embedding-width",
            Integer.toString(w.spec().embeddingWidth()),
            "--seed",
            Long.toString(SEED),
            "--row-staleness",
            Integer.toString(ROW_STALENESS)));
    args.addAll(PythonSuite.dataArgs(w, "--test-data"));
    Report.Table byRound =
        report.table(
            "Python trainer",
            "Click-through sparse-lr, Python trainer against the Java trainer (1 + 1 each, the"
                + " same job: data and its order, tables and initial values, SGD, batch, row"
                + " staleness bound, last pass evaluated), each round",
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
    report.ratio("python_ctr_auc_minus_java", Rounds.median(aucs), Target.within(0.005), figures);
    System.out.printf(
        Locale.ROOT,
        "python ctr median: samples ratio %.3f, auc difference %.4f%n",
        Rounds.median(ratios),
        Rounds.median(aucs));
    return rounds;
  }

  private Outcome javaJob(Workload w, int round) throws Exception {
    return java.run(w, ONE, "java-vs-python-round" + (round + 1), JAVA_SETTINGS, null);
  }
}
