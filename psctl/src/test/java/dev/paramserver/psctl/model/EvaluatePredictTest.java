package dev.paramserver.psctl.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.Run;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EvaluatePredictTest {
  @TempDir static Path dir;
  static DemoData.Result data;
  static Path modelFile;
  static Evaluation expected;

  /** Trains a softmax model in-process with plain SGD and saves it. */
  @BeforeAll
  static void trainAndSave() throws Exception {
    data =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder().classes(4).features(8).train(2000).test(500).build());
    ModelSpec spec = ModelSpec.softmax(8, 4);
    Model m = ModelFactory.create(spec);
    Parameters p = Initializers.initial(m, 1);
    Parameters g = Parameters.zerosLike(m);
    List<Example> train =
        Dataset.readGlobs(List.of(dir.resolve("data").resolve("train-*.recordio").toString()));
    for (Batch b : new Dataset(new ArrayList<>(train), 8).batches(32)) {
      g.clear();
      m.trainStep(p, b, g);
      for (String name : p.denseNames()) {
        float[] w = p.dense(name);
        float[] gw = g.dense(name);
        for (int i = 0; i < w.length; i++) {
          w[i] -= 0.1f * gw[i];
        }
      }
    }
    modelFile = dir.resolve("model.pb");
    ModelFiles.write(modelFile, spec, m, p, "test");
    List<Example> test = Dataset.readGlobs(List.of(data.testFile().toString()));
    expected = Evaluation.of(m, p, new Dataset(new ArrayList<>(test), 8), 100);
  }

  @Test
  void evaluate_reproducesTheAccuracyOfTheSavedModel() {
    Run r =
        Run.psctl(
            "evaluate", "--model", modelFile.toString(), "--data", data.testFile().toString());
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(expected.accuracy()).isGreaterThan(0.8);
    assertThat(r.out())
        .contains(String.format(Locale.ROOT, "accuracy=%.6f", expected.accuracy()))
        .contains("samples=500")
        .doesNotContain("RESULT");
  }

  @Test
  void evaluateJson_holdsTheSameFigures() throws Exception {
    Run r =
        Run.psctl(
            "evaluate",
            "--model",
            modelFile.toString(),
            "--data",
            data.testFile().toString(),
            "-o",
            "json");
    assertThat(r.code()).as(r.err()).isZero();
    tools.jackson.databind.JsonNode j = new tools.jackson.databind.ObjectMapper().readTree(r.out());
    assertThat(j.path("model").asString()).isEqualTo("softmax");
    assertThat(j.path("samples").asLong()).isEqualTo(500);
    assertThat(j.path("accuracy").asDouble()).isCloseTo(expected.accuracy(), within(1e-9));
    assertThat(j.path("loss").asDouble()).isCloseTo(expected.loss(), within(1e-6));
    assertThat(j.has("auc")).isTrue();
    assertThat(j.path("auc").isNull()).isTrue(); // four classes: no AUC
  }

  @Test
  void evaluate_withResultLine_endsWithTheResultLineOfTheSameFigures() {
    Run r =
        Run.psctl(
            "evaluate",
            "--model",
            modelFile.toString(),
            "--data",
            data.testFile().toString(),
            "--result-line");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out().strip().lines().reduce((a, b) -> b).orElse(""))
        .isEqualTo(
            String.format(
                Locale.ROOT,
                "RESULT accuracy=%.4f loss=%.4f samples=500",
                expected.accuracy(),
                expected.loss()));
  }

  @Test
  void predict_writesOneLinePerRecordWithTheMostProbableClass() throws Exception {
    Path out = dir.resolve("pred.csv");
    Run r =
        Run.psctl(
            "predict",
            "--model",
            modelFile.toString(),
            "--data",
            data.testFile().toString(),
            "--out",
            out.toString());
    assertThat(r.code()).as(r.err()).isZero();
    List<String> lines = Files.readAllLines(out);
    assertThat(lines).hasSize(501);
    assertThat(lines.get(0)).isEqualTo("index,label,predicted,p0,p1,p2,p3");
    long correct =
        lines.stream().skip(1).map(l -> l.split(",")).filter(f -> f[1].equals(f[2])).count();
    assertThat(correct / 500.0)
        .isCloseTo(expected.accuracy(), org.assertj.core.data.Offset.offset(1e-9));
  }

  @Test
  void evaluate_onAFileThatIsNotAModel_failsNamingIt() throws Exception {
    Path bogus = dir.resolve("bogus.pb");
    Files.writeString(bogus, "not a model");
    Run r =
        Run.psctl("evaluate", "--model", bogus.toString(), "--data", data.testFile().toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("bogus.pb").contains("not a paramserver model file");
  }

  @Test
  void evaluate_withDataOfOtherWidth_saysSo() throws Exception {
    DemoData.Result other =
        DemoData.generate(
            dir.resolve("other"),
            DemoData.Options.builder().classes(4).features(5).train(10).test(10).build());
    Run r =
        Run.psctl(
            "evaluate", "--model", modelFile.toString(), "--data", other.testFile().toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("5 dense features").contains("expects 8");
  }
}
