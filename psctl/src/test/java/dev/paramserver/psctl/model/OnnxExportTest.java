package dev.paramserver.psctl.model;

import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.ShardedWriter;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.Run;
import dev.paramserver.recordio.Compressor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * psctl export writes ONNX models that ONNX Runtime loads and whose predictions on raw test records
 * match psctl predict's within 1e-5, for each model kind.
 */
class OnnxExportTest {
  @TempDir static Path dir;
  static OrtEnvironment env;

  @BeforeAll
  static void ort() {
    env = OrtEnvironment.getEnvironment();
  }

  private static Path export(Path model, String name) {
    Path onnx = dir.resolve(name + ".onnx");
    Run r =
        Run.psctl(
            "export", "--model", model.toString(), "--format", "onnx", "--out", onnx.toString());
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("wrote " + onnx);
    return onnx;
  }

  /** psctl predict's probabilities and printed label/predicted columns, by record. */
  private static List<String[]> predict(Path model, Path data, String name) throws Exception {
    Path out = dir.resolve(name + "-pred.csv");
    Run r =
        Run.psctl(
            "predict",
            "--model",
            model.toString(),
            "--data",
            data.toString(),
            "--out",
            out.toString());
    assertThat(r.code()).as(r.err()).isZero();
    return Files.readAllLines(out).stream().skip(1).map(l -> l.split(",")).toList();
  }

  private static float[][] dense(List<Example> ex) {
    float[][] x = new float[ex.size()][];
    for (int i = 0; i < x.length; i++) {
      List<Float> d = ex.get(i).getDenseList();
      x[i] = new float[d.size()];
      for (int j = 0; j < x[i].length; j++) {
        x[i][j] = d.get(j);
      }
    }
    return x;
  }

  /** Runs the ONNX model on raw examples; returns [probabilities, predicted]. */
  private static Object[] runOnnx(Path onnx, List<Example> ex, boolean sparse) throws Exception {
    try (OrtSession session = env.createSession(onnx.toString(), new OrtSession.SessionOptions())) {
      Map<String, OnnxTensor> in = new HashMap<>();
      try {
        if (ex.get(0).getDenseCount() > 0 || !sparse) {
          in.put("features", OnnxTensor.createTensor(env, dense(ex)));
        }
        if (sparse) {
          int k = 1;
          for (Example e : ex) {
            k = Math.max(k, e.getSparseIdsCount());
          }
          long[][] ids = new long[ex.size()][k];
          float[][] vals = new float[ex.size()][k];
          for (int i = 0; i < ex.size(); i++) {
            Example e = ex.get(i);
            for (int j = 0; j < e.getSparseIdsCount(); j++) {
              ids[i][j] = e.getSparseIds(j);
              vals[i][j] = e.getSparseValuesCount() > 0 ? e.getSparseValues(j) : 1f;
            }
          }
          in.put("sparse_ids", OnnxTensor.createTensor(env, ids));
          in.put("sparse_values", OnnxTensor.createTensor(env, vals));
        }
        try (OrtSession.Result r = session.run(in)) {
          return new Object[] {
            r.get("probabilities").get().getValue(), r.get("predicted").get().getValue()
          };
        }
      } finally {
        for (OnnxTensor t : in.values()) {
          t.close();
        }
      }
    }
  }

  private static void assertSamePredictions(Object[] onnx, List<String[]> predicted) {
    float[][] probs = (float[][]) onnx[0];
    long[] classes = (long[]) onnx[1];
    assertThat(probs).hasNumberOfRows(predicted.size());
    for (int i = 0; i < probs.length; i++) {
      String[] line = predicted.get(i);
      for (int j = 0; j < probs[i].length; j++) {
        assertThat((double) probs[i][j])
            .as("record %d class %d", i, j)
            .isCloseTo(Double.parseDouble(line[3 + j]), org.assertj.core.data.Offset.offset(1e-5));
      }
      assertThat(classes[i]).isGreaterThanOrEqualTo(0).isLessThan(probs[i].length);
    }
  }

  @Test
  void softmax_onStandardizedIris_matchesPredict_andCarriesLabelNames() throws Exception {
    Path iris = Path.of(OnnxExportTest.class.getResource("/iris.csv").toURI());
    assertThat(
            Run.psctl(
                    "convert", "--input", iris.toString(), "--out", dir + "/iris", "--standardize")
                .code())
        .isZero();
    Path data = dir.resolve("iris-00000.recordio");
    List<Example> ex = Dataset.readGlobs(List.of(data.toString()));
    Path model =
        InProcessTraining.trainAndSave(
            ModelSpec.softmax(4, 3),
            ex,
            DatasetInfos.read(dir.resolve("iris.dataset.pb")),
            20,
            0.1f,
            dir.resolve("softmax.pb"));
    Path onnx = export(model, "softmax");
    List<String[]> predicted = predict(model, data, "softmax");
    Object[] out = runOnnx(onnx, ex, false);
    assertSamePredictions(out, predicted);
    List<String> names = List.of("setosa", "versicolor", "virginica");
    long[] classes = (long[]) out[1];
    for (int i = 0; i < classes.length; i++) {
      assertThat(names.get((int) classes[i])).isEqualTo(predicted.get(i)[2]);
    }
    try (OrtSession s = env.createSession(onnx.toString(), new OrtSession.SessionOptions())) {
      Map<String, String> meta = s.getMetadata().getCustomMetadata();
      assertThat(meta)
          .containsEntry("paramserver.label_names", "[\"setosa\",\"versicolor\",\"virginica\"]")
          .containsEntry("paramserver.model", "softmax")
          .containsEntry("paramserver.standardized", "true");
      assertThat(s.getMetadata().getProducerName()).isEqualTo("paramserver");
    }
  }

  @Test
  void mlp_withTanhAndReluLayers_matchesPredict() throws Exception {
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("demo"),
            DemoData.Options.builder().classes(4).features(6).train(800).test(200).build());
    List<Example> train =
        Dataset.readGlobs(List.of(dir.resolve("demo").resolve("train-*.recordio").toString()));
    List<Example> test = Dataset.readGlobs(List.of(demo.testFile().toString()));
    for (Mlp.Activation act : Mlp.Activation.values()) {
      ModelSpec spec = new ModelSpec("mlp", 6, 4, List.of(8, 5), act, 0);
      Path model =
          InProcessTraining.trainAndSave(
              spec, train, DatasetInfo.getDefaultInstance(), 2, 0.05f, dir.resolve("mlp.pb"));
      Path onnx = export(model, "mlp-" + act);
      assertSamePredictions(runOnnx(onnx, test, false), predict(model, demo.testFile(), "mlp"));
    }
  }

  @Test
  void sparseLr_withEmbeddingDenseFeaturesAndUnseenIds_matchesPredict() throws Exception {
    Random r = new Random(5);
    Path trainFile = dir.resolve("click/train.recordio");
    Path testFile = dir.resolve("click/test.recordio");
    List<Example> train = clicks(r, 600, 50);
    List<Example> test = clicks(r, 150, 80); // ids 50..79 never seen in training
    write(trainFile, train);
    write(testFile, test);
    DatasetInfo info =
        DatasetInfo.newBuilder()
            .setFeatureScaling(
                dev.paramserver.proto.v1.FeatureScaling.newBuilder()
                    .addMean(2000)
                    .addMean(-3)
                    .addScale(900)
                    .addScale(2))
            .build();
    Path model =
        InProcessTraining.trainAndSave(
            new ModelSpec("sparse-lr", 2, 2, List.of(), Mlp.Activation.RELU, 3),
            train,
            info,
            3,
            0.1f,
            dir.resolve("sparse.pb"));
    Path onnx = export(model, "sparse");
    assertSamePredictions(runOnnx(onnx, test, true), predict(model, testFile, "sparse"));
  }

  @Test
  void sparseLr_wideOnlyWithoutDenseFeatures_andAnUntrainedEmptyTable_matchesPredict()
      throws Exception {
    Random r = new Random(9);
    List<Example> test = new java.util.ArrayList<>();
    for (Example e : clicks(r, 40, 30)) {
      test.add(e.toBuilder().clearDense().build());
    }
    Path testFile = dir.resolve("wide/test.recordio");
    write(testFile, test);
    ModelSpec spec = new ModelSpec("sparse-lr", 0, 2, List.of(), Mlp.Activation.RELU, 0);
    Path untrained =
        InProcessTraining.trainAndSave(
            spec, test, DatasetInfo.getDefaultInstance(), 0, 0.1f, dir.resolve("empty.pb"));
    Object[] out = runOnnx(export(untrained, "empty"), test, true);
    assertSamePredictions(out, predict(untrained, testFile, "empty"));
    assertThat(((float[][]) out[0])[0]).containsExactly(0.5f, 0.5f);
    Path trained =
        InProcessTraining.trainAndSave(
            spec, test, DatasetInfo.getDefaultInstance(), 3, 0.1f, dir.resolve("wide.pb"));
    assertSamePredictions(
        runOnnx(export(trained, "wide"), test, true), predict(trained, testFile, "wide"));
  }

  private static List<Example> clicks(Random r, int n, int ids) {
    List<Example> out = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      Example.Builder b = Example.newBuilder();
      float big = 2000 + (float) r.nextGaussian() * 900;
      b.addDense(big).addDense(-3 + (float) r.nextGaussian() * 2);
      int k = 1 + r.nextInt(4);
      double z = (big - 2000) / 900;
      for (int j = 0; j < k; j++) {
        int id = r.nextInt(ids);
        b.addSparseIds(id * 7919L).addSparseValues(1f + (j % 2));
        z += id % 3 == 0 ? 1 : -0.5;
      }
      b.setLabel(r.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1 : 0);
      out.add(b.build());
    }
    return out;
  }

  private static void write(Path file, List<Example> ex) throws Exception {
    try (ShardedWriter w = new ShardedWriter(List.of(file), Compressor.NONE, 100)) {
      for (Example e : ex) {
        w.write(e);
      }
    }
  }
}
