package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.train.Rounds.Shape;
import dev.paramserver.testsupport.DelayLine;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A network that costs something ({@code --only delay}, run only when named): the click-through 1 +
 * 1 job of the training section ({@link Workload#ctr}) once directly and once through a {@link
 * DelayLine} between the trainer and the pserver at each one-way delay of {@link #DELAYS} and each
 * rate of {@link #RATES} (the pserver advertises the line's port). Each job's samples/s and its
 * training thread's shares of the measured window: blocked (waiting for answers and pulls), on a
 * CPU, waiting for one. Pipelining (lag 2 for a sparse model) should keep the blocked share flat
 * while the round trip stays below the lag's batches. The line runs in the benchmark's JVM, so its
 * CPU is the supervisor's, outside the job's CPU per sample.
 */
public final class DelaySuite {
  /** One-way delays run, in microseconds. */
  static final List<Integer> DELAYS_US = List.of(100, 500, 2000);

  /** The delays as durations. */
  static final List<Duration> DELAYS =
      DELAYS_US.stream().map(us -> Duration.ofNanos(us * 1000L)).toList();

  /** Link rates run (bytes/s): 10 Gbit/s, and 1 Gbit/s without {@code --quick}. */
  static final List<Double> RATES = List.of(10e9 / 8, 1e9 / 8);

  private static final Shape ONE = new Shape(1, 1);

  private final Path runDir;
  private final boolean quick;
  private final DistributedJob jobs;

  public DelaySuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.quick = quick;
    this.jobs = new DistributedJob(runDir, jars);
  }

  public void run(Report report) throws Exception {
    Workload w = Workload.ctr(runDir.resolve("delay").resolve("data"), quick);
    System.out.printf(Locale.ROOT, "delay %s: %s%n", w.name(), w.title());
    Report.Table t =
        report.table(
            "Delay",
            w.title()
                + ", 1 + 1, the trainer's traffic to the pserver through a user-space delay line"
                + " (one run each): samples/s of the measured window and the training thread's"
                + " shares of it",
            "link",
            "one-way delay ms",
            "samples/s",
            "vs direct",
            "blocked",
            "on CPU",
            "run-queue wait",
            "CPU-us/sample");
    Map<String, Object> json = new LinkedHashMap<>();
    Outcome direct = jobs.run(w, ONE, "direct", Map.of(), null, null);
    row(t, "direct", 0, direct, direct);
    json.put("direct", direct);
    List<Double> rates = quick ? RATES.subList(0, 1) : RATES;
    for (double rate : rates) {
      String link = Report.fmt(rate * 8 / 1e9) + " Gbit/s";
      List<Double> blocked = new ArrayList<>();
      for (int i = 0; i < DELAYS.size(); i++) {
        double ms = DELAYS_US.get(i) / 1000.0;
        Outcome o;
        try (DelayLine line = new DelayLine("delay", DELAYS.get(i), rate)) {
          o =
              jobs.run(
                  w,
                  ONE,
                  "delay" + DELAYS_US.get(i) + "us-" + link.replace(" ", ""),
                  Map.of(),
                  null,
                  line);
          // what crossed the line: the trainer's traffic took it
          System.out.printf(
              Locale.ROOT, "  the delay line forwarded %.1f MB%n", line.forwarded() / 1e6);
        }
        row(t, link, ms, o, direct);
        blocked.add(o.window("train_thread_blocked_share"));
        json.put(link + " " + ms + " ms", o);
        if (rate == RATES.get(0)) {
          report.ratio(
              "delay_ctr_1x1_blocked_share_d" + Report.fmt(ms) + "ms",
              o.window("train_thread_blocked_share"),
              null,
              "the training thread's blocked share of the measured window, ctr 1 + 1 through a"
                  + " delay line of "
                  + Report.fmt(ms)
                  + " ms one way at "
                  + link
                  + " (direct: "
                  + Report.fmt(direct.window("train_thread_blocked_share"))
                  + "; one run each)");
        }
      }
      if (rate == RATES.get(0)) {
        double spread =
            blocked.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN)
                - blocked.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
        report.ratio(
            "delay_ctr_1x1_blocked_share_spread",
            spread,
            null,
            "largest minus smallest blocked share of the training thread over the delays "
                + DELAYS_US
                + " us at "
                + link
                + ": flat is near 0");
      }
    }
    report.extra("delay", json);
  }

  private static void row(Report.Table t, String link, double ms, Outcome o, Outcome direct) {
    System.out.printf(
        Locale.ROOT,
        "delay %s %.1f ms: %.0f samples/s; %s%n",
        link,
        ms,
        o.steady(),
        CostReport.line(o));
    t.row(
        link,
        ms,
        o.steady(),
        o.steady() / direct.steady(),
        o.window("train_thread_blocked_share"),
        o.window("train_thread_run_share"),
        o.window("train_thread_wait_share"),
        o.window("all_cpu_us_per_sample_no_jit"));
  }
}
