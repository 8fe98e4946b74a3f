package dev.paramserver.bench.train;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.bench.cluster.CheckpointDirs;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;

/**
 * Live scaling ({@code --only scaling}, run only when named): the click-through job ({@link
 * Workload#ctr}, 2 pservers and 2 trainers, more passes so that it trains through the scaling) is
 * scaled from 2 to 3 to 2 pservers through the leader master's scale endpoint (what {@code psctl
 * scale} calls), {@link #ROUNDS} times. Reports each committed move (slots, rows, bytes, copy,
 * stall, time), the stall's median, p99 and maximum over every move (target: p99 at most 200 ms),
 * and the rows a grow moved against the rows held before it, as a multiple of the new pserver's
 * share 1/3 (target: at most 1.1).
 */
public final class ScalingSuite {
  private static final int ROUNDS = 2;
  private static final int PASSES = 30;

  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;

  public ScalingSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
  }

  public void run(Report report) throws Exception {
    Workload w = Workload.ctr(runDir.resolve("scaling").resolve("data"), quick);
    System.out.printf(Locale.ROOT, "scaling %s: %s%n", w.name(), w.title());
    Report.Table t =
        report.table(
            "Scaling",
            "Moves of a live click-through job scaled 2 -> 3 -> 2 pservers ("
                + w.title()
                + ", 2 trainers), "
                + (quick ? 1 : ROUNDS)
                + " round(s)",
            "round",
            "move",
            "slots",
            "rows",
            "bytes",
            "copy ms",
            "stall ms",
            "move ms");
    List<Double> stalls = new ArrayList<>();
    List<Double> rowShares = new ArrayList<>();
    List<Double> waits = new ArrayList<>();
    List<Object> json = new ArrayList<>();
    int rounds = quick ? 1 : ROUNDS;
    for (int round = 1; round <= rounds; round++) {
      Map<String, Object> r = round(w, round, t, stalls, waits);
      rowShares.add((Double) r.get("rowsMovedVsShare"));
      json.add(r);
    }
    stalls.sort(Double::compare);
    double p50 = percentile(stalls, 0.5);
    double p99 = percentile(stalls, 0.99);
    double max = stalls.isEmpty() ? Double.NaN : stalls.get(stalls.size() - 1);
    rowShares.sort(Double::compare);
    double share = percentile(rowShares, 0.5);
    System.out.printf(
        Locale.ROOT,
        "scaling: %d moves, stall p50 %.0f ms, p99 %.0f ms, max %.0f ms; a grow moved %.3f of"
            + " the new pserver's share of the rows%n",
        stalls.size(),
        p50,
        p99,
        max,
        share);
    String baseline =
        stalls.size()
            + " committed moves of ctr scaled 2 -> 3 -> 2 ("
            + rounds
            + " round(s)); stall = from the old owner refusing the slots to the new owner holding"
            + " them durably (p50 "
            + Report.fmt(p50)
            + " ms, max "
            + Report.fmt(max)
            + " ms)";
    report.ratio("scaling_move_stall_p99_ms", p99, Report.Target.atMost(200), baseline);
    waits.sort(Double::compare);
    double wait = waits.isEmpty() ? Double.NaN : waits.get(waits.size() - 1);
    System.out.printf(
        Locale.ROOT, "scaling: trainers' moved-request wait p99, worst scaling: %.0f ms%n", wait);
    report.ratio(
        "scaling_trainer_moved_wait_p99_ms",
        wait,
        Report.Target.atMost(200),
        "the trainers' paramserver_trainer_moved_wait_seconds p99 (a request refused with MOVED"
            + " waiting for the epoch: stall, commit, the trainer seeing it), the worst trainer of"
            + " the worst scaling");
    report.ratio(
        "scaling_grow_rows_moved_vs_share",
        share,
        Report.Target.atMost(1.1),
        "rows a 2 -> 3 grow moved / rows held before it, against 1/3 (median of the rounds)");
    report.extra("scaling", json);
  }

  private Map<String, Object> round(
      Workload w, int round, Report.Table t, List<Double> stalls, List<Double> waits)
      throws Exception {
    Path dir = runDir.resolve("scaling").resolve("round" + round);
    ClusterSpec.Builder b =
        jars.spec(dir)
            .job("bench-scaling")
            .masters(1)
            .pservers(2)
            .trainers(2)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
            .property(
                Role.MASTER,
                "paramserver.master.chunks-per-task",
                Integer.toString(w.chunksPerTask()))
            .property(Role.TRAINER, "paramserver.trainer.train-data", w.trainGlob())
            .property(Role.TRAINER, "paramserver.trainer.test-data", w.testGlob())
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .property(Role.PSERVER, "paramserver.pserver.register-timeout", "1s")
            .startTimeout(Duration.ofSeconds(240));
    w.trainerProperties()
        .forEach((k, v) -> b.property(Role.TRAINER, "paramserver.trainer." + k, v));
    ClusterSpec spec = b.build();
    LocalCluster.prepareClassData(spec);
    Map<String, Object> out = new LinkedHashMap<>();
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      cluster.addProcess(Role.PSERVER); // waits for index 2 until the job grows
      cluster.awaitJob(s -> s.pass() >= 1 || s.isFinished() || s.isFailed(), Duration.ofMinutes(4));
      AdminClient admin =
          AdminClient.create(
              "the master",
              "http://127.0.0.1:" + cluster.process(Role.MASTER, 0).httpPort(),
              cluster.adminToken(),
              Duration.ofSeconds(30));
      long before = rows(cluster, admin, 2);
      List<JsonNode> grow = scale(admin, 3);
      long grownRows = 0;
      for (JsonNode m : grow) {
        grownRows += m.path("rows").asLong();
      }
      double growWait = movedWaitMs(cluster);
      List<JsonNode> shrink = scale(admin, 2);
      double shrinkWait = movedWaitMs(cluster);
      waits.add(growWait);
      waits.add(shrinkWait);
      JobStatusView now = cluster.jobStatus().orElseThrow();
      if (now.isFinished() || now.isFailed()) {
        throw new IllegalStateException(
            "the job ended before the scaling did: it measured no live move (" + now + ")");
      }
      for (JsonNode m : concat(grow, shrink)) {
        stalls.add(m.path("stallMs").asDouble());
        t.row(
            round,
            m.path("id").asString(),
            m.path("slots").asInt(),
            m.path("rows").asLong(),
            m.path("bytes").asLong(),
            m.path("copyMs").asLong(),
            m.path("stallMs").asLong(),
            m.path("durationMs").asLong());
      }
      double share = before == 0 ? Double.NaN : (double) grownRows / before * 3.0;
      System.out.printf(
          Locale.ROOT,
          "round %d: %d + %d moves; the grow moved %d of %d rows (%.3f of the new share)%n",
          round,
          grow.size(),
          shrink.size(),
          grownRows,
          before,
          share);
      out.put("round", round);
      out.put("rowsBefore", before);
      out.put("rowsMovedByGrow", grownRows);
      out.put("rowsMovedVsShare", share);
      out.put("trainerMovedWaitP99MsGrow", growWait);
      out.put("trainerMovedWaitP99MsShrink", shrinkWait);
      out.put("moves", concat(grow, shrink).stream().map(JsonNode::toString).toList());
      cluster.awaitJobEnd(Duration.ofMinutes(10));
    } finally {
      CheckpointDirs.drop(dir);
    }
    return out;
  }

  /**
   * The worst p99 over the trainers of {@code paramserver_trainer_moved_wait_seconds}, ms (NaN when
   * none was refused with MOVED).
   */
  private static double movedWaitMs(LocalCluster cluster) throws Exception {
    double worst = Double.NaN;
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    for (int i = 0; i < 2; i++) {
      String body =
          http.send(
                  HttpRequest.newBuilder(
                          URI.create(
                              "http://127.0.0.1:"
                                  + cluster.process(Role.TRAINER, i).httpPort()
                                  + "/actuator/prometheus"))
                      .timeout(Duration.ofSeconds(10))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
      Matcher m = P99.matcher(body);
      if (m.find()) {
        double ms = Double.parseDouble(m.group(1)) * 1000;
        worst = Double.isNaN(worst) ? ms : Math.max(worst, ms);
      }
    }
    return worst;
  }

  private static final Pattern P99 =
      Pattern.compile(
          "(?m)^paramserver_trainer_moved_wait_seconds\\{[^}]*quantile=\"0\\.99\"[^}]*\\}"
              + " ([0-9.eE+-]+)$");

  /** Rows the first {@code n} pservers hold, from their admin status. */
  private static long rows(LocalCluster cluster, AdminClient admin, int n) throws Exception {
    long rows = 0;
    for (int i = 0; i < n; i++) {
      JsonNode s = cluster.adminStatus(Role.PSERVER, i);
      for (JsonNode table : s.path("details").path("sparseTables")) {
        rows += table.path("rows").asLong();
      }
      if (s.path("details").isMissingNode()) {
        for (JsonNode table : s.path("sparseTables")) {
          rows += table.path("rows").asLong();
        }
      }
    }
    return rows;
  }

  /** Asks for {@code n} pservers and returns the moves committed until the job has them. */
  private static List<JsonNode> scale(AdminClient admin, int n) throws Exception {
    int seen = admin.scaling().path("moves").size();
    admin.scale(n);
    long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
    while (System.nanoTime() < deadline) {
      JsonNode s = admin.scaling();
      if (s.path("phase").asString().equals("failed")) {
        throw new IllegalStateException("scaling failed: " + s.path("lastError").asString());
      }
      if (s.path("phase").asString().equals("idle")
          && s.path("pservers").asInt() == n
          && s.path("desired").asInt() == n) {
        List<JsonNode> moves = new ArrayList<>();
        JsonNode all = s.path("moves");
        for (int i = Math.min(seen, all.size()); i < all.size(); i++) {
          if (all.get(i).path("result").asString().equals("committed")) {
            moves.add(all.get(i));
          }
        }
        return moves;
      }
      Thread.sleep(200);
    }
    throw new IllegalStateException("the job did not reach " + n + " pservers within 5 minutes");
  }

  private static List<JsonNode> concat(List<JsonNode> a, List<JsonNode> b) {
    List<JsonNode> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  private static double percentile(List<Double> sorted, double q) {
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    int i = (int) Math.ceil(q * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }
}
