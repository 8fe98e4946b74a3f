package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
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
@Timeout(240)
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
        Jobs.spec(dir.resolve(name))
            .job(name)
            .masters(1)
            .pservers(1)
            .trainers(1)
            .property(Role.MASTER, "paramserver.master.passes", "2")
            .property(
                Role.TRAINER,
                "paramserver.trainer.train-data",
                data.resolve("train-*.recordio").toString())
            .property(
                Role.TRAINER,
                "paramserver.trainer.test-data",
                data.resolve("test-*.recordio").toString())
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
  private double auc(String name) {
    return ModelsEndToEndTest.evaluated(
        dir.resolve(name).resolve("model.pb"),
        dir.resolve("sparse").resolve("test-*.recordio"),
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

  @Test
  void cappedAtAQuarterOfTheIds_lfuReachesTheUncappedAucWithinTwoPoints() throws Exception {
    Path data = ModelsEndToEndTest.clickData(dir, 8000, 2000);
    int distinct = distinctIds(dir.resolve("raw").resolve("train.svm"));
    long cap = distinct / 4;
    Run uncapped = train("uncapped", data, 0);
    Run capped = train("capped", data, cap);
    assertThat(uncapped.evictions()).isZero();
    assertThat(uncapped.rows()).isGreaterThan(cap);
    assertThat(capped.rows()).isLessThanOrEqualTo(cap);
    assertThat(capped.evictions()).isPositive();
    assertThat(uncapped.auc()).as("uncapped AUC").isGreaterThan(0.7);
    assertThat(capped.auc())
        .as("AUC capped at %d of %d ids vs uncapped %.4f", cap, distinct, uncapped.auc())
        .isGreaterThanOrEqualTo(uncapped.auc() - 0.02);
  }
}
