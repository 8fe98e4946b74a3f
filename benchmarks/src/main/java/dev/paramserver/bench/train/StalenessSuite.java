package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.train.Rounds.Shape;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * AUC against staleness ({@code --only staleness}, run only when named): the click-through 1 + 1
 * job of the training section ({@link Workload#ctr}) once at each trainer row-cache staleness bound
 * of {@link #STALENESS} ({@code paramserver.trainer.sparse.staleness}, in batches; 0 pulls every
 * row each batch), after the single JVM and the same job with the cache off ({@code
 * sparse.cache=false}: rows pulled before each batch, the trainer as it was before the cache), on
 * the same data: each job's samples/s and AUC against the single JVM's.
 */
public final class StalenessSuite {
  /** The staleness bounds run, in batches. */
  static final List<Integer> STALENESS = List.of(0, 1, 4, 16);

  /** The trainer property that bounds the staleness of its cached rows. */
  static final String PROPERTY = "sparse.staleness";

  private static final Shape ONE = new Shape(1, 1);

  private final Path runDir;
  private final boolean quick;
  private final DistributedJob jobs;

  public StalenessSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.quick = quick;
    this.jobs = new DistributedJob(runDir, jars);
  }

  public void run(Report report) throws Exception {
    Workload w = Workload.ctr(runDir.resolve("staleness").resolve("data"), quick);
    System.out.printf(Locale.ROOT, "staleness %s: %s%n", w.name(), w.title());
    Outcome single = SingleJvmJob.run(w);
    System.out.printf(
        Locale.ROOT,
        "staleness single JVM: steady %.0f samples/s, whole job %.0f, auc %.4f%n",
        single.steady(),
        single.wholeJob(),
        single.quality());
    Report.Table t =
        report.table(
            "Staleness",
            "AUC against the trainer's row-cache staleness bound (paramserver.trainer.sparse"
                + ".staleness, batches): "
                + w.title()
                + ", the 1 + 1 job once per bound and the single JVM once, before them;"
                + " samples/s steady (second half of the passes) and whole job",
            "setup",
            "staleness",
            "steady samples/s",
            "steady vs single",
            "whole-job samples/s",
            "AUC",
            "AUC minus single JVM's");
    t.row(
        "single JVM, no RPC", "-", single.steady(), 1.0, single.wholeJob(), single.quality(), 0.0);
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("single", single);
    // the cache off first: the trainer as it was before the cache (rows pulled before each batch)
    Outcome off = jobs.run(w, ONE, "cache-off", Map.of("sparse.cache", "false"), null);
    double offSteady = off.steady() / single.steady();
    System.out.printf(
        Locale.ROOT,
        "cache off: steady %.0f samples/s (%.3f of the single JVM's), whole job %.0f, auc %.4f%n",
        off.steady(),
        offSteady,
        off.wholeJob(),
        off.quality());
    t.row(
        ONE + ", cache off",
        "-",
        off.steady(),
        offSteady,
        off.wholeJob(),
        off.quality(),
        off.quality() - single.quality());
    report.ratio(
        "staleness_ctr_1x1_cache_off_vs_single_jvm",
        offSteady,
        null,
        "ctr 1 + 1 with paramserver.trainer.sparse.cache=false (rows pulled before each batch)"
            + " against the single JVM (one run each)");
    json.put("cacheOff", off);
    for (int s : STALENESS) {
      Outcome o = jobs.run(w, ONE, "staleness" + s, Map.of(PROPERTY, Integer.toString(s)), null);
      double steady = o.steady() / single.steady();
      double aucDelta = o.quality() - single.quality();
      System.out.printf(
          Locale.ROOT,
          "staleness %d: steady %.0f samples/s (%.3f of the single JVM's), whole job %.0f, auc"
              + " %.4f (single JVM %.4f)%n",
          s,
          o.steady(),
          steady,
          o.wholeJob(),
          o.quality(),
          single.quality());
      t.row(
          ONE.toString(),
          Integer.toString(s),
          o.steady(),
          steady,
          o.wholeJob(),
          o.quality(),
          aucDelta);
      String baseline =
          "ctr 1 + 1 at staleness "
              + s
              + " against the single JVM (one run each; "
              + Report.fmt(o.steady())
              + " vs "
              + Report.fmt(single.steady())
              + " samples/s steady; auc "
              + Report.fmt(o.quality())
              + " vs "
              + Report.fmt(single.quality())
              + ")";
      report.ratio("staleness_ctr_1x1_s" + s + "_vs_single_jvm", steady, null, baseline);
      report.ratio("staleness_ctr_1x1_s" + s + "_auc_minus_single_jvm", aucDelta, null, baseline);
      json.put("staleness" + s, o);
    }
    report.extra("staleness", json);
  }
}
