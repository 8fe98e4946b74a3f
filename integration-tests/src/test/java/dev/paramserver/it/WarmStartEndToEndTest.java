package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.v1.Example;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Warm start on real processes: a softmax trained in this JVM is saved as a model file; a job of
 * two pservers and two trainers starts from it ({@code paramserver.trainer.init-from}) with a
 * learning rate too small to move any weight, so its first pass's test accuracy equals the saved
 * model's. The same job sets every optimizer option, and each pserver reports them as its
 * parameters' optimizer, with the bounded-staleness mode and bound. A sparse-lr job warm-started
 * the same way gets the saved rows of its sparse tables on the pservers that own them.
 */
@Timeout(600)
class WarmStartEndToEndTest {
  @TempDir Path dir;

  @Test
  void warmStartedJob_firstPassAccuracyEqualsTheSavedModels_andEveryOptionReachesThePservers()
      throws Exception {
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder().train(4000).test(1000).shards(2).build());
    Path saved = dir.resolve("saved.pb");
    trainInThisJvm(demo, saved);
    double savedAccuracy = ModelsEndToEndTest.evaluated(saved, demo.testFile(), "accuracy");
    assertThat(savedAccuracy).as("accuracy of the saved model").isGreaterThan(0.8);

    ClusterSpec spec =
        onePassJob(
            "warm",
            Map.ofEntries(
                Map.entry("train-data", dir.resolve("data").resolve("train-*.recordio").toString()),
                Map.entry("test-data", demo.testFile().toString()),
                Map.entry("init-from", saved.toString()),
                Map.entry("optimizer", "adam"),
                Map.entry("learning-rate", "1e-12"),
                Map.entry("beta1", "0.8"),
                Map.entry("beta2", "0.99"),
                Map.entry("epsilon", "1e-6"),
                Map.entry("clip-value", "3"),
                Map.entry("clip-norm", "7"),
                Map.entry("lr-schedule", "exponential"),
                Map.entry("lr-gamma", "0.5"),
                Map.entry("mode", "bounded-staleness"),
                Map.entry("staleness", "3")));
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      assertThat(firstPassAccuracy(cluster))
          .as("first-pass accuracy of the warm-started job")
          .isCloseTo(savedAccuracy, within(1e-4));

      for (int i = 0; i < 2; i++) {
        JsonNode status = cluster.adminStatus(Role.PSERVER, i);
        assertThat(status.at("/mode").asString()).isEqualTo("BOUNDED_STALENESS");
        assertThat(status.at("/staleness").asInt()).isEqualTo(3);
        JsonNode optimizers = status.at("/optimizers");
        assertThat(optimizers.size()).as("parameters on pserver %d", i).isPositive();
        for (Iterator<JsonNode> it = optimizers.iterator(); it.hasNext(); ) {
          JsonNode o = it.next();
          assertThat(o.path("kind").asString()).isEqualTo("ADAM");
          assertThat(o.path("learningRate").asDouble()).isCloseTo(1e-12, within(1e-15));
          assertThat(o.path("beta1").asDouble()).isCloseTo(0.8, within(1e-6));
          assertThat(o.path("beta2").asDouble()).isCloseTo(0.99, within(1e-6));
          assertThat(o.path("epsilon").asDouble()).isCloseTo(1e-6, within(1e-9));
          assertThat(o.path("clipValue").asDouble()).isEqualTo(3.0);
          assertThat(o.path("clipNorm").asDouble()).isEqualTo(7.0);
          assertThat(o.at("/schedule/kind").asString()).isEqualTo("EXPONENTIAL");
          assertThat(o.at("/schedule/gamma").asDouble()).isEqualTo(0.5);
        }
      }
    }
  }

  @Test
  void warmStartedSparseLrJob_firstPassAccuracyEqualsTheSavedModels() throws Exception {
    Path data = ModelsEndToEndTest.clickData(dir, 8000, 2000);
    Path trainGlob = data.resolve("train-*.recordio");
    Path testGlob = data.resolve("test-*.recordio");
    Path saved = dir.resolve("saved-sparse.pb");
    trainSparseInThisJvm(trainGlob, testGlob, saved);
    double savedAccuracy = ModelsEndToEndTest.evaluated(saved, testGlob, "accuracy");
    assertThat(savedAccuracy).as("accuracy of the saved sparse-lr model").isGreaterThan(0.75);

    ClusterSpec spec =
        onePassJob(
            "warm-sparse",
            Map.ofEntries(
                Map.entry("train-data", trainGlob.toString()),
                Map.entry("test-data", testGlob.toString()),
                Map.entry("init-from", saved.toString()),
                Map.entry("model", "sparse-lr"),
                Map.entry("embedding-width", "4"),
                Map.entry("optimizer", "sgd"),
                Map.entry("learning-rate", "1e-12"),
                Map.entry("sparse.optimizer", "adagrad"),
                Map.entry("sparse.learning-rate", "1e-12")));
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      assertThat(firstPassAccuracy(cluster))
          .as("first-pass accuracy of the warm-started sparse-lr job")
          .isCloseTo(savedAccuracy, within(1e-4));
    }
  }

  /** A one-pass job of 1 master, 2 pservers and 2 trainers with these trainer properties. */
  private ClusterSpec onePassJob(String job, Map<String, String> trainer) {
    ClusterSpec.Builder spec =
        Jobs.spec(dir.resolve("run-" + job))
            .job(job)
            .masters(1)
            .pservers(2)
            .trainers(2)
            .property(Role.MASTER, "paramserver.master.passes", "1");
    trainer.forEach((k, v) -> spec.property(Role.TRAINER, "paramserver.trainer." + k, v));
    return spec.build();
  }

  /** Waits for the one-pass job to finish (both trainers evaluated) and returns its accuracy. */
  private static double firstPassAccuracy(LocalCluster cluster) {
    JobStatusView end =
        cluster.awaitJob(
            s ->
                s.isFailed()
                    || s.isFinished()
                        && s.passes().size() == 1
                        && s.passes().get(0).evalReports() >= 1,
            Duration.ofMinutes(5));
    assertThat(end.state()).as("job (%s)", end.failureReason()).isEqualTo("FINISHED");
    return end.passes().get(0).evalAccuracy();
  }

  /**
   * Two passes of plain SGD of a sparse-lr model (embedding width 4) over the training files,
   * written as a model file that also holds a (zero) row for every id of the test data: rows the
   * file lacks would start from the pservers' random values in the job, not from the file's.
   */
  private static void trainSparseInThisJvm(Path trainGlob, Path testGlob, Path out)
      throws Exception {
    List<Example> examples = Dataset.readGlobs(List.of(trainGlob.toString()));
    int features = Dataset.featuresOf(examples);
    Dataset train = new Dataset(examples, features);
    ModelSpec spec = new ModelSpec("sparse-lr", features, 2, List.of(), Mlp.Activation.RELU, 4);
    Model model = ModelFactory.create(spec);
    Parameters params = Initializers.initial(model, 7);
    for (int pass = 0; pass < 2; pass++) {
      for (Batch batch : train.shuffle(pass).batches(32)) {
        Parameters grads = Parameters.zerosLike(model);
        model.trainStep(params, batch, grads);
        for (ParameterDef def : model.parameters()) {
          if (def.sparse()) {
            Parameters.SparseTable w = params.sparse(def.name());
            grads
                .sparse(def.name())
                .forEach(
                    (id, g) -> {
                      float[] row = w.row(id);
                      for (int i = 0; i < g.length; i++) {
                        row[i] -= 0.1f * g[i];
                      }
                    });
          } else {
            float[] w = params.dense(def.name());
            float[] g = grads.dense(def.name());
            for (int i = 0; i < w.length; i++) {
              w[i] -= 0.1f * g[i];
            }
          }
        }
      }
    }
    Dataset test = new Dataset(Dataset.readGlobs(List.of(testGlob.toString())), features);
    for (Batch batch : test.batches(1024)) {
      for (long id : batch.sparseIds()) {
        for (ParameterDef def : model.parameters()) {
          if (def.sparse()) {
            params.sparse(def.name()).row(id);
          }
        }
      }
    }
    ModelFiles.write(out, spec, model, params, "saved-in-jvm");
  }

  /** Two passes of plain SGD over the training files, written as a model file. */
  private static void trainInThisJvm(DemoData.Result demo, Path out) throws Exception {
    List<String> globs = new ArrayList<>();
    demo.trainFiles().forEach(p -> globs.add(p.toString()));
    int features = (int) demo.features();
    Dataset train = new Dataset(Dataset.readGlobs(globs), features);
    Mlp model = Mlp.softmax(features, demo.classes());
    Parameters params = Initializers.initial(model, 7);
    for (int pass = 0; pass < 2; pass++) {
      for (Batch batch : train.shuffle(pass).batches(32)) {
        Parameters grads = Parameters.zerosLike(model);
        model.trainStep(params, batch, grads);
        for (ParameterDef def : model.parameters()) {
          float[] w = params.dense(def.name());
          float[] g = grads.dense(def.name());
          for (int i = 0; i < w.length; i++) {
            w[i] -= 0.1f * g[i];
          }
        }
      }
    }
    ModelFiles.write(
        out, ModelSpec.softmax(features, demo.classes()), model, params, "saved-in-jvm");
  }
}
