package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.Standardization;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.testsupport.Poll;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tabular CSV dataset with raw features in the thousands and class names, converted with {@code
 * psctl convert --standardize}: the distributed job (real processes, asynchronous, two trainers)
 * reaches the accuracy of the same model trained in one JVM on the same standardized data, while
 * training on the raw features stays far below; the model file carries the names and the
 * statistics, so psctl evaluate on the raw test records reproduces the job's accuracy, and the ONNX
 * file the trainer writes ({@code paramserver.trainer.onnx-output}) gives, in ONNX Runtime on the
 * raw test features, the probabilities the model file gives.
 */
class StandardizationEndToEndTest {
  private static final String[] CLASSES = {"bronze", "gold", "silver"}; // sorted: index order
  private static final double[] BASE = {5000, 3000, 8000, 10, 1, 4000};
  private static final double[] SPREAD = {2000, 1500, 800, 3, 0.2, 1200};
  private static final int PASSES = 3;
  private static final int BATCH = 32;
  private static final float LR = 0.1f;

  @TempDir Path dir;

  @Test
  void standardizedJob_reachesTheSingleProcessAccuracy_rawFeaturesDoNot() throws Exception {
    Path raw = dir.resolve("raw");
    Files.createDirectories(raw);
    writeCsv(raw.resolve("train.csv"), 6000, 1);
    writeCsv(raw.resolve("test.csv"), 1500, 2);
    Path data = dir.resolve("data");
    convert(
        "--input",
        raw + "/train.csv",
        "--out",
        data + "/train",
        "--shards",
        "2",
        "--records-per-chunk",
        "250",
        "--standardize");
    convert(
        "--input",
        raw + "/test.csv",
        "--out",
        data + "/test",
        "--statistics-from",
        data + "/train.dataset.pb");
    DatasetInfo info = DatasetInfos.read(data.resolve("train.dataset.pb"));
    assertThat(info.getLabelNamesList()).containsExactly(CLASSES);
    List<Example> train = Dataset.readGlobs(List.of(data + "/train-*.recordio"));
    List<Example> test = Dataset.readGlobs(List.of(data + "/test-*.recordio"));
    assertThat(train.get(0).getDense(0)).as("records keep raw values").isGreaterThan(100f);

    Standardization scaling = Standardization.fromProto(info.getFeatureScaling());
    double singleScaled = trainInOneJvm(train, test, scaling);
    double singleRaw = trainInOneJvm(train, test, null);

    Path model = dir.resolve("run").resolve("model.pb");
    Path onnx = dir.resolve("run").resolve("model.onnx");
    JobStatusView.PassView last;
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("standardize")
                .masters(1)
                .pservers(1)
                .trainers(2)
                .property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
                .property(
                    Role.TRAINER, "paramserver.trainer.train-data", data + "/train-*.recordio")
                .property(Role.TRAINER, "paramserver.trainer.test-data", data + "/test-*.recordio")
                .property(Role.TRAINER, "paramserver.trainer.learning-rate", Float.toString(LR))
                .property(Role.TRAINER, "paramserver.trainer.batch-size", Integer.toString(BATCH))
                .property(Role.TRAINER, "paramserver.trainer.model-output", model.toString())
                .property(Role.TRAINER, "paramserver.trainer.onnx-output", onnx.toString())
                .build())) {
      cluster.start();
      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && s.passes().size() == PASSES
                          && s.passes().get(PASSES - 1).evalReports() >= 1,
              Duration.ofMinutes(5));
      assertThat(end.state()).as(end.failureReason()).isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, PASSES);
      last = end.passes().get(PASSES - 1);
    }
    double distributed = last.evalAccuracy();
    System.out.printf(
        Locale.ROOT,
        "standardization: one JVM raw %.4f, one JVM standardized %.4f, distributed standardized"
            + " %.4f%n",
        singleRaw,
        singleScaled,
        distributed);
    assertThat(singleRaw)
        .as("raw features in the thousands, one JVM")
        .isLessThan(singleScaled - 0.10);
    assertThat(distributed)
        .as("distributed on standardized features vs one JVM (%.4f)", singleScaled)
        .isGreaterThanOrEqualTo(singleScaled - 0.01);

    ModelFiles.Loaded loaded = waitForModel(model);
    assertThat(loaded.labelNames()).containsExactly(CLASSES);
    assertThat(loaded.standardization()).isPresent();
    assertThat(ModelsEndToEndTest.evaluated(model, data.resolve("test-*.recordio"), "accuracy"))
        .isCloseTo(distributed, org.assertj.core.data.Offset.offset(0.01));
    assertOnnxMatchesTheModelFile(waitFor(onnx), loaded, test);
  }

  /** ONNX Runtime on the raw test features gives the model file's probabilities within 1e-5. */
  private static void assertOnnxMatchesTheModelFile(
      Path onnx, ModelFiles.Loaded loaded, List<Example> test) throws Exception {
    Batch batch = Batch.of(test, loaded.spec().features());
    float[][] raw = new float[test.size()][loaded.spec().features()];
    for (int i = 0; i < raw.length; i++) {
      System.arraycopy(batch.dense(), i * raw[i].length, raw[i], 0, raw[i].length);
    }
    loaded.prepare(batch);
    float[] expected = loaded.model().predict(loaded.parameters(), batch);
    OrtEnvironment env = OrtEnvironment.getEnvironment();
    try (OrtSession session = env.createSession(onnx.toString(), new OrtSession.SessionOptions());
        OnnxTensor input = OnnxTensor.createTensor(env, raw);
        OrtSession.Result result = session.run(Map.of("features", input))) {
      float[][] probs = (float[][]) result.get("probabilities").get().getValue();
      int k = loaded.spec().classes();
      for (int i = 0; i < probs.length; i++) {
        for (int j = 0; j < k; j++) {
          assertThat(probs[i][j])
              .as("record %d class %d", i, j)
              .isCloseTo(expected[i * k + j], org.assertj.core.data.Offset.offset(1e-5f));
        }
      }
      assertThat(session.getMetadata().getCustomMetadata())
          .containsEntry("paramserver.label_names", "[\"bronze\",\"gold\",\"silver\"]");
    }
  }

  /** The same softmax, learning rate, batch size and passes, trained in this JVM with plain SGD. */
  private static double trainInOneJvm(
      List<Example> train, List<Example> test, Standardization scaling) {
    ModelSpec spec = ModelSpec.softmax(BASE.length, CLASSES.length);
    Model m = ModelFactory.create(spec);
    Parameters p = Initializers.initial(m, 42);
    Parameters g = Parameters.zerosLike(m);
    Dataset data = new Dataset(new ArrayList<>(train), spec.features());
    for (int pass = 0; pass < PASSES; pass++) {
      data.shuffle(pass);
      for (Batch b : data.batches(BATCH)) {
        if (scaling != null) {
          scaling.apply(b);
        }
        g.clear();
        m.trainStep(p, b, g);
        for (String name : p.denseNames()) {
          float[] w = p.dense(name);
          float[] gw = g.dense(name);
          for (int i = 0; i < w.length; i++) {
            w[i] -= LR * gw[i];
          }
        }
      }
    }
    return Evaluation.of(
            m,
            p,
            new Dataset(new ArrayList<>(test), spec.features()),
            1024,
            b -> {
              if (scaling != null) {
                scaling.apply(b);
              }
            })
        .accuracy();
  }

  /** The trainer writes the model as the job ends: wait for it (bounded). */
  private static ModelFiles.Loaded waitForModel(Path model) throws Exception {
    return ModelFiles.read(waitFor(model));
  }

  private static Path waitFor(Path file) {
    Poll.until(Duration.ofSeconds(60), () -> Files.isRegularFile(file), "the file " + file);
    return file;
  }

  private static void convert(String... args) {
    assertThat(Psctl.commandLine().execute(prepend("convert", args))).isZero();
  }

  private static String[] prepend(String first, String[] rest) {
    String[] all = new String[rest.length + 1];
    all[0] = first;
    System.arraycopy(rest, 0, all, 1, rest.length);
    return all;
  }

  /**
   * A header, then per record six measurements of very different magnitudes (each feature's class
   * means apart by about its spread) and the class name, some quoted.
   */
  private static void writeCsv(Path file, int records, long seed) throws Exception {
    Random hidden = new Random(7);
    double[][] mu = new double[CLASSES.length][BASE.length];
    for (double[] row : mu) {
      for (int j = 0; j < row.length; j++) {
        row[j] = hidden.nextGaussian() * 1.2;
      }
    }
    Random r = new Random(seed);
    try (BufferedWriter w = Files.newBufferedWriter(file)) {
      w.write("weight,length,\"price, list\",rooms,ratio,area,grade\n");
      for (int i = 0; i < records; i++) {
        int c = r.nextInt(CLASSES.length);
        StringBuilder line = new StringBuilder();
        for (int j = 0; j < BASE.length; j++) {
          double v = BASE[j] + SPREAD[j] * (mu[c][j] + r.nextGaussian());
          line.append(String.format(Locale.ROOT, "%.3f,", v));
        }
        line.append(i % 2 == 0 ? CLASSES[c] : "\"" + CLASSES[c] + "\"");
        w.write(line.append('\n').toString());
      }
    }
  }
}
