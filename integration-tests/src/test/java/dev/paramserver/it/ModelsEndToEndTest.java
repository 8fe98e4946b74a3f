package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.testsupport.Poll;
import java.io.BufferedWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The other built-in models end to end on real processes: an MLP trained synchronously with Adam
 * and bfloat16 gradients on the wire, and the sparse model on a generated click-through-like LibSVM
 * dataset converted with psctl, trained asynchronously with Adagrad and accumulated gradients. Each
 * reaches a stated accuracy, and psctl evaluate reproduces it from the exported model.
 */
class ModelsEndToEndTest {
  @TempDir Path dir;

  private JobStatusView.PassView train(
      String name, int passes, Path trainGlob, Path test, Map<String, String> trainer)
      throws Exception {
    ClusterSpec.Builder spec =
        Jobs.spec(dir.resolve(name))
            .job(name)
            .masters(1)
            .pservers(2)
            .trainers(2)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
            .property(Role.TRAINER, "paramserver.trainer.train-data", trainGlob.toString())
            .property(Role.TRAINER, "paramserver.trainer.test-data", test.toString())
            .property(
                Role.TRAINER,
                "paramserver.trainer.model-output",
                dir.resolve(name).resolve("model.pb").toString());
    trainer.forEach((k, v) -> spec.property(Role.TRAINER, "paramserver.trainer." + k, v));
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      cluster.start();
      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && s.passes().size() == passes
                          && s.passes().get(passes - 1).evalReports() >= 1,
              Duration.ofMinutes(5));
      assertThat(end.state()).as("%s (%s)", name, end.failureReason()).isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, passes);
      // the elected trainer writes the model after it reported the last evaluation
      Path model = dir.resolve(name).resolve("model.pb");
      Poll.until(Duration.ofSeconds(60), () -> Files.exists(model), name + "'s model written");
      return end.passes().get(passes - 1);
    }
  }

  /** Accuracy that psctl evaluate reports for the exported model. */
  private double evaluate(String name, Path test) {
    return evaluated(dir.resolve(name).resolve("model.pb"), test, "accuracy");
  }

  /** A figure ({@code accuracy}, {@code auc}) psctl evaluate reports for a model on data. */
  static double evaluated(Path model, Path data, String figure) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Psctl.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute("evaluate", "--model", model.toString(), "--data", data.toString());
    assertThat(code).as(err.toString()).isZero();
    Matcher m = Pattern.compile(figure + "=([0-9.]+)").matcher(out.toString());
    assertThat(m.find()).as(out.toString()).isTrue();
    return Double.parseDouble(m.group(1));
  }

  @Test
  void mlp_syncAdamWithBfloat16Gradients_reachesNinetyFivePercent() throws Exception {
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("dense"),
            DemoData.Options.builder().train(12000).test(3000).shards(2).build());
    JobStatusView.PassView last =
        train(
            "mlp-sync",
            2,
            dir.resolve("dense").resolve("train-*.recordio"),
            demo.testFile(),
            Map.of(
                "model", "mlp",
                "hidden", "32",
                "optimizer", "adam",
                "learning-rate", "0.005",
                "sync", "true",
                "gradient-dtype", "bfloat16"));
    assertThat(last.evalAccuracy()).as("mlp test accuracy").isGreaterThan(0.95);
    assertThat(evaluate("mlp-sync", demo.testFile()))
        .isCloseTo(last.evalAccuracy(), org.assertj.core.data.Offset.offset(0.01));
  }

  @Test
  void sparseLr_onConvertedLibsvmClickData_reachesEightyPercent() throws Exception {
    Path data = clickData(dir, 16000, 4000);
    Path testGlob = data.resolve("test-*.recordio");
    JobStatusView.PassView last =
        train(
            "sparse-lr",
            2,
            data.resolve("train-*.recordio"),
            testGlob,
            Map.of(
                "model", "sparse-lr",
                "embedding-width", "4",
                "optimizer", "adagrad",
                "learning-rate", "0.1",
                "accumulate", "2"));
    assertThat(last.evalAccuracy()).as("sparse-lr test accuracy").isGreaterThan(0.80);
    assertThat(evaluate("sparse-lr", testGlob))
        .isCloseTo(last.evalAccuracy(), org.assertj.core.data.Offset.offset(0.01));
  }

  /**
   * Generates click logs of {@code train} and {@code test} records and converts them with psctl
   * convert into {@code dir/sparse/{train,test}-*.recordio} (2 shards each); returns {@code
   * dir/sparse}.
   */
  static Path clickData(Path dir, int train, int test) throws Exception {
    Path raw = dir.resolve("raw");
    Files.createDirectories(raw);
    writeClickLog(raw.resolve("train.svm"), train, 1);
    writeClickLog(raw.resolve("test.svm"), test, 2);
    return convertLibsvm(raw, dir.resolve("sparse"));
  }

  /**
   * Converts {@code raw/{train,test}.svm} with psctl convert into {@code
   * data/{train,test}-*.recordio} (2 shards each); returns {@code data}.
   */
  static Path convertLibsvm(Path raw, Path data) {
    for (String part : new String[] {"train", "test"}) {
      int code =
          Psctl.commandLine()
              .execute(
                  "convert",
                  "--format",
                  "libsvm",
                  "--input",
                  raw.resolve(part + ".svm").toString(),
                  "--out",
                  data.resolve(part).toString(),
                  "--shards",
                  "2",
                  "--records-per-chunk",
                  "250");
      assertThat(code).isZero();
    }
    return data;
  }

  /**
   * A click log in LibSVM form: 10 categorical fields, each value hashed to a feature id, labels
   * +1/-1 drawn from a hidden logistic model over the fields' values.
   */
  private static void writeClickLog(Path file, int records, long seed) throws Exception {
    Random hidden = new Random(99);
    double[][] weight = new double[10][50];
    for (double[] field : weight) {
      for (int v = 0; v < field.length; v++) {
        field[v] = hidden.nextGaussian() * 1.2;
      }
    }
    Random r = new Random(seed);
    try (BufferedWriter w = Files.newBufferedWriter(file)) {
      for (int i = 0; i < records; i++) {
        StringBuilder line = new StringBuilder();
        java.util.TreeSet<Integer> ids = new java.util.TreeSet<>();
        double z = -0.3;
        for (int f = 0; f < 10; f++) {
          int v = (int) Math.min(49, Math.abs(r.nextGaussian() * 12));
          z += weight[f][v];
          ids.add(1 + Math.floorMod((f * 7919 + v) * 104729, 1 << 18));
        }
        boolean click = r.nextDouble() < 1 / (1 + Math.exp(-z));
        line.append(click ? "+1" : "-1");
        for (int id : ids) {
          line.append(' ').append(id).append(":1");
        }
        w.write(line.append('\n').toString());
      }
    }
  }
}
