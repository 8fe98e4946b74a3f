package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A click-through job (sparse-lr on a generated click log, real processes) whose pserver caps each
 * sparse table at a quarter of the distinct feature ids, with LFU eviction: it still reaches an AUC
 * within 2 points of the same job without a cap, and the cap really evicted rows.
 */
@Timeout(300)
class EmbeddingCapEndToEndTest {
  private static final Pattern EVICTIONS =
      Pattern.compile(
          "paramserver_pserver_sparse_evictions_total\\{[^}]*table=\"wide\"[^}]*} ([0-9.E]+)");
  private static final Pattern ROWS =
      Pattern.compile("paramserver_pserver_sparse_rows\\{[^}]*table=\"wide\"[^}]*} ([0-9.E]+)");

  @TempDir Path dir;

  private record Run(double auc, double evictions, double rows) {}

  private Run train(String name, Path data, long maxRows) throws Exception {
    ClusterSpec.Builder spec =
        ClickJobs.trainOn(Jobs.spec(dir.resolve(name)), data)
            .job(name)
            .masters(1)
            .pservers(1)
            .trainers(1)
            .property(Role.MASTER, "paramserver.master.passes", "2")
            // one chunk a task, as the two-point AUC margin below was calibrated with: grouping
            // chunks (task-records) reorders the records one trainer sees and moved the capped
            // AUC by about 0.2 points
            .property(Role.MASTER, "paramserver.master.task-records", "0")
            .property(
                Role.TRAINER,
                "paramserver.trainer.model-output",
                dir.resolve(name).resolve("model.pb").toString());
    Map.of(
            "model", "sparse-lr",
            "embedding-width", "4",
            "optimizer", "adagrad",
            "learning-rate", "0.1")
        .forEach((k, v) -> spec.property(Role.TRAINER, "paramserver.trainer." + k, v));
    if (maxRows > 0) {
      spec.property(Role.PSERVER, "paramserver.pserver.sparse.max-rows", Long.toString(maxRows));
      spec.property(Role.PSERVER, "paramserver.pserver.sparse.eviction", "lfu");
    }
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      cluster.start();
      JobStatusView end =
          cluster.awaitJob(
              s -> s.isFailed() || s.isFinished() && s.passes().size() == 2, Duration.ofMinutes(3));
      assertThat(end.state()).as("%s (%s)", name, end.failureReason()).isEqualTo("FINISHED");
      String metrics = Jobs.scrapePrometheus(cluster.process(Role.PSERVER, 0).httpPort());
      return new Run(auc(name), metric(EVICTIONS, metrics), metric(ROWS, metrics));
    }
  }

  private static double metric(Pattern p, String metrics) {
    Matcher m = p.matcher(metrics);
    assertThat(m.find()).as("%s in %s", p, metrics).isTrue();
    return Double.parseDouble(m.group(1));
  }

  /** The AUC psctl evaluate reports for the exported model on the test data. */
  private double auc(String name) throws InterruptedException {
    // the job ends when the master has every task; the trainer writes the model right after
    Path model = dir.resolve(name).resolve("model.pb");
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    while (!Files.isRegularFile(model) && System.nanoTime() < deadline) {
      Thread.sleep(200);
    }
    return ModelsEndToEndTest.evaluated(
        dir.resolve(name).resolve("model.pb"),
        dir.resolve("zipf").resolve("test-*.recordio"),
        "auc");
  }

  /** Distinct feature ids of the LibSVM training log. */
  private static int distinctIds(Path svm) throws Exception {
    Set<String> ids = new HashSet<>();
    try (Stream<String> lines = Files.lines(svm)) {
      lines.forEach(
          l -> {
            String[] parts = l.split(" ");
            for (int i = 1; i < parts.length; i++) {
              ids.add(parts[i].substring(0, parts[i].indexOf(':')));
            }
          });
    }
    return ids.size();
  }

  /**
   * A click log as real ones are: {@value #FIELDS} categorical fields of {@value #VALUES} values
   * each, drawn Zipf-distributed (s = 1.1), each (field, value) its own feature id; labels +1/-1
   * from a hidden logistic model over the values. A push of 64 records carries at most 640 ids,
   * well under a quarter of the ~4000 distinct ones, so a cap at a quarter can hold.
   */
  static void writeZipfClickLog(Path file, int records, long seed) throws Exception {
    Random hidden = new Random(7);
    double[][] weight = new double[FIELDS][VALUES];
    for (double[] field : weight) {
      for (int v = 0; v < VALUES; v++) {
        field[v] = hidden.nextGaussian();
      }
    }
    double[] cdf = new double[VALUES];
    double sum = 0;
    for (int v = 0; v < VALUES; v++) {
      sum += 1 / Math.pow(v + 1, 1.1);
      cdf[v] = sum;
    }
    Random r = new Random(seed);
    try (BufferedWriter w = Files.newBufferedWriter(file)) {
      for (int i = 0; i < records; i++) {
        StringBuilder features = new StringBuilder();
        double z = -0.3;
        for (int f = 0; f < FIELDS; f++) {
          int v = Arrays.binarySearch(cdf, r.nextDouble() * sum);
          v = Math.min(VALUES - 1, v < 0 ? -v - 1 : v);
          z += weight[f][v];
          features.append(' ').append(1 + f * VALUES + v).append(":1");
        }
        boolean click = r.nextDouble() < 1 / (1 + Math.exp(-z));
        w.write((click ? "+1" : "-1") + features + "\n");
      }
    }
  }

  private static final int FIELDS = 10;
  private static final int VALUES = 400;

  @Test
  void cappedAtAQuarterOfTheIds_lfuReachesTheUncappedAucWithinTwoPoints() throws Exception {
    Path raw = Files.createDirectories(dir.resolve("raw"));
    writeZipfClickLog(raw.resolve("train.svm"), 8000, 1);
    writeZipfClickLog(raw.resolve("test.svm"), 2000, 2);
    Path data = ModelsEndToEndTest.convertLibsvm(raw, dir.resolve("zipf"));
    int distinct = distinctIds(dir.resolve("raw").resolve("train.svm"));
    long cap = distinct / 4;
    Run uncapped = train("uncapped", data, 0);
    Run capped = train("capped", data, cap);
    System.out.printf(
        "embedding cap: %d distinct ids, cap %d: AUC uncapped %.4f (%.0f rows), capped %.4f"
            + " (%.0f rows, %.0f evictions)%n",
        distinct,
        cap,
        uncapped.auc(),
        uncapped.rows(),
        capped.auc(),
        capped.rows(),
        capped.evictions());
    assertThat(uncapped.evictions()).isZero();
    assertThat(uncapped.rows()).isGreaterThan(cap);
    assertThat(capped.rows()).as("rows held under a cap of %d", cap).isLessThanOrEqualTo(cap);
    assertThat(capped.evictions()).isPositive();
    assertThat(uncapped.auc()).as("uncapped AUC").isGreaterThan(0.7);
    assertThat(capped.auc())
        .as(
            "AUC capped at %d of %d ids (%.0f evictions) vs uncapped %.4f",
            cap, distinct, capped.evictions(), uncapped.auc())
        .isGreaterThanOrEqualTo(uncapped.auc() - 0.02);
  }
}
