package dev.paramserver.bench.train;

import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.train.Rounds.Shape;
import dev.paramserver.models.SparseLogisticRegression;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The click-through workload at scale ({@link Workload#ctr100m}): one 1 + 1 job, then one single
 * JVM right after it (one run each, not rounds: each takes minutes), with their samples/s, rows/s
 * and AUC, and the tables the pserver ends with (the model's 16-wide {@code emb} table, and its
 * width-1 {@code wide} table with a row per id as well).
 *
 * <p><b>Rows/s</b> are embedding rows read and updated per second: samples/s times the rows per
 * sample, the distinct ids of each batch summed over the single JVM's first pass per record ({@code
 * rows_per_sample} of {@link Outcome#sparse}). The distributed job cuts the same records into
 * batches of the same size, so the same rows per sample apply to it; each such row is pulled once
 * and pushed once per batch when trainers cache no rows, so the rows on the wire are twice these.
 */
final class SparseScaleRun {
  private static final Shape ONE = new Shape(1, 1);

  private final DistributedJob jobs;

  SparseScaleRun(DistributedJob jobs) {
    this.jobs = jobs;
  }

  void run(Report report, Workload w) throws Exception {
    Outcome job = jobs.run(w, ONE, "once", Map.of(), null);
    print(w, ONE.id(), job);
    Outcome single = SingleJvmJob.run(w);
    print(w, "single JVM", single);
    double rowsPerSample = single.sparse("rows_per_sample");
    double steady = job.steady() / single.steady();
    double whole = job.wholeJob() / single.wholeJob();
    Report.Table t =
        report.table(
            "Training",
            "Click-through at scale: "
                + w.title()
                + ", "
                + w.passes()
                + " passes (the second the steady state), pserver and trainer each with a fixed"
                + " heap of "
                + w.heapMiB()
                + " MiB, the single JVM with twice it; one run each, the 1 + 1 job then the single JVM. Rows/s: embedding rows read"
                + " and updated per second, samples/s times the distinct ids per batch of 256 per"
                + " record ("
                + Report.fmt(rowsPerSample)
                + ", from the single JVM's first pass; each such row is pulled and pushed once a"
                + " batch without a trainer row cache)",
            "setup",
            "steady samples/s",
            "steady vs single",
            "steady rows/s",
            "whole-job samples/s",
            "whole job vs single",
            "AUC",
            "AUC minus single JVM's",
            "pserver emb rows held",
            "emb bytes/row",
            "pserver tables MiB",
            "pserver heap used MiB");
    t.row(
        "single JVM, no RPC",
        single.steady(),
        1.0,
        single.steady() * rowsPerSample,
        single.wholeJob(),
        1.0,
        single.quality(),
        0.0,
        Double.NaN,
        Double.NaN,
        Double.NaN,
        Double.NaN);
    double rows = job.sparse("pserver_rows_" + SparseLogisticRegression.EMB);
    double tableBytes =
        job.sparse().entrySet().stream()
            .filter(e -> e.getKey().startsWith("pserver_bytes_"))
            .mapToDouble(Map.Entry::getValue)
            .sum();
    t.row(
        ONE.toString(),
        job.steady(),
        steady,
        job.steady() * rowsPerSample,
        job.wholeJob(),
        whole,
        job.quality(),
        job.quality() - single.quality(),
        rows,
        job.sparse("pserver_bytes_" + SparseLogisticRegression.EMB) / rows,
        tableBytes / (1 << 20),
        job.sparse("pserver_heap_used_bytes") / (1 << 20));
    String baseline =
        w.name()
            + " in one JVM (one run each; "
            + Report.fmt(job.steady())
            + " vs "
            + Report.fmt(single.steady())
            + " samples/s steady, "
            + Report.fmt(job.steady() * rowsPerSample)
            + " vs "
            + Report.fmt(single.steady() * rowsPerSample)
            + " embedding rows/s; auc "
            + Report.fmt(job.quality())
            + " vs "
            + Report.fmt(single.quality())
            + "; pserver embedding table "
            + Report.fmt(rows)
            + " rows, pserver heap "
            + w.heapMiB()
            + " MiB)";
    report.ratio("train_" + w.name() + "_1x1_vs_single_jvm", steady, null, baseline);
    report.ratio("train_" + w.name() + "_1x1_whole_job_vs_single_jvm", whole, null, baseline);
    Map<String, Object> json = new LinkedHashMap<>();
    json.put(
        "rowsPerSecond",
        "embedding rows read and updated per second: steady samples/s x rowsPerSample (distinct"
            + " ids per batch, summed over the single JVM's first pass, per record)");
    json.put("rowsPerSample", rowsPerSample);
    json.put("pserverHeapMiB", w.heapMiB());
    json.put("singleJvmHeapMiB", 2 * w.heapMiB());
    json.put("jobSteadyRowsPerSecond", job.steady() * rowsPerSample);
    json.put("singleSteadyRowsPerSecond", single.steady() * rowsPerSample);
    json.put("jobAuc", job.quality());
    json.put("singleAuc", single.quality());
    json.put("job", job);
    json.put("single", single);
    report.extra(w.name(), json);
  }

  private static void print(Workload w, String setup, Outcome o) {
    System.out.printf(
        Locale.ROOT,
        "train %s %s: steady %.0f samples/s, whole job %.0f, %s %.4f, %s%n",
        w.name(),
        setup,
        o.steady(),
        o.wholeJob(),
        w.metric(),
        o.quality(),
        o.sparse());
  }
}
