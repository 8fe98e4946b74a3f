package dev.paramserver.psctl.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.psctl.Run;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The iris CSV with species names, converted with --standardize: a model trained on it carries the
 * names and the statistics, and psctl evaluate/predict apply them to the raw records.
 */
class IrisModelTest {
  @TempDir static Path dir;
  static Path model;
  static Path data;

  @BeforeAll
  static void convertAndTrain() throws Exception {
    InProcessTraining.Iris iris = InProcessTraining.iris(dir);
    data = iris.data();
    model = iris.model();
  }

  @Test
  void evaluate_appliesTheModelsStandardizationToRawRecords() {
    Run r = Run.psctl("evaluate", "--model", model.toString(), "--data", data.toString());
    assertThat(r.code()).as(r.err()).isZero();
    Matcher m = Pattern.compile("accuracy=([0-9.]+)").matcher(r.out());
    assertThat(m.find()).isTrue();
    assertThat(Double.parseDouble(m.group(1))).isGreaterThan(0.93);
  }

  @Test
  void predict_printsSpeciesNames() throws Exception {
    Path out = dir.resolve("pred.csv");
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
    List<String> lines = Files.readAllLines(out);
    assertThat(lines).hasSize(151);
    assertThat(lines.get(0)).isEqualTo("index,label,predicted,p0,p1,p2");
    assertThat(lines.get(1)).startsWith("0,setosa,setosa,");
    assertThat(lines.get(150)).startsWith("149,virginica,");
    long right =
        lines.stream().skip(1).map(l -> l.split(",")).filter(f -> f[1].equals(f[2])).count();
    assertThat(right).isGreaterThan(140);
  }

  @Test
  void dataNamingItsClassesOtherwise_isRefusedByEvaluateAndPredict() throws Exception {
    Path other = dir.resolve("other.csv");
    Files.writeString(other, "a,b,c,d,kind\n1,2,3,4,x\n1,2,3,4,y\n1,2,3,4,z\n");
    assertThat(Run.psctl("convert", "--input", other.toString(), "--out", dir + "/other").code())
        .isZero();
    Path data = dir.resolve("other-00000.recordio");
    Run e = Run.psctl("evaluate", "--model", model.toString(), "--data", data.toString());
    assertThat(e.code()).isEqualTo(1);
    assertThat(e.err())
        .contains(
            "the data names its classes [x, y, z], the model [setosa, versicolor, virginica]");
    Run p =
        Run.psctl(
            "predict",
            "--model",
            model.toString(),
            "--data",
            data.toString(),
            "--out",
            dir.resolve("p.csv").toString());
    assertThat(p.code()).isEqualTo(1);
    assertThat(p.err()).contains("--statistics-from");
  }

  @Test
  void predict_writesClassNamesWithCommasAndQuotes_asACsvReaderReadsThem() throws Exception {
    Path odd = dir.resolve("odd.csv");
    Files.writeString(
        odd,
        "a,b,kind\n0,0,\"big, red\"\n1,1,\"say \"\"hi\"\"\"\n0,0.1,\"big, red\"\n"
            + "1,0.9,\"say \"\"hi\"\"\"\n");
    assertThat(Run.psctl("convert", "--input", odd.toString(), "--out", dir + "/odd").code())
        .isZero();
    Path oddData = dir.resolve("odd-00000.recordio");
    Path oddModel =
        InProcessTraining.trainAndSave(
            ModelSpec.softmax(2, 2),
            Dataset.readGlobs(List.of(oddData.toString())),
            DatasetInfos.read(dir.resolve("odd.dataset.pb")),
            5,
            0.1f,
            dir.resolve("odd-model.pb"));
    Path out = dir.resolve("odd.csv.out");
    Run r =
        Run.psctl(
            "predict",
            "--model",
            oddModel.toString(),
            "--data",
            oddData.toString(),
            "--out",
            out.toString());
    assertThat(r.code()).as(r.err()).isZero();
    CSVFormat header = CSVFormat.RFC4180.builder().setHeader().setSkipHeaderRecord(true).get();
    try (CSVParser csv = CSVParser.parse(out, StandardCharsets.UTF_8, header)) {
      List<CSVRecord> rows = csv.getRecords();
      assertThat(csv.getHeaderNames()).containsExactly("index", "label", "predicted", "p0", "p1");
      assertThat(rows)
          .extracting(row -> row.get("label"))
          .containsExactly("big, red", "say \"hi\"", "big, red", "say \"hi\"");
      assertThat(rows)
          .extracting(row -> row.get("predicted"))
          .allSatisfy(p -> assertThat(p).isIn("big, red", "say \"hi\""));
    }
  }
}
