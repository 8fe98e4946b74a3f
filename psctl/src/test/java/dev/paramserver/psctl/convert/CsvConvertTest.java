package dev.paramserver.psctl.convert;

import static dev.paramserver.psctl.Records.examples;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.models.DatasetInfos;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.Run;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** CSV conversion through Commons CSV: quoting, headers, label names, statistics. */
class CsvConvertTest {
  @TempDir Path dir;

  private Path file(String name, String text) throws Exception {
    Path f = dir.resolve(name);
    Files.writeString(f, text);
    return f;
  }

  static Path iris() throws Exception {
    return Path.of(CsvConvertTest.class.getResource("/iris.csv").toURI());
  }

  @Test
  void iris_withHeaderAndSpeciesNames_convertsWithNamesStoredBesideTheData() throws Exception {
    Run r = Run.psctl("convert", "--input", iris().toString(), "--out", dir + "/iris");
    assertThat(r.code()).as(r.err()).isZero();
    List<Example> ex = examples(dir.resolve("iris-00000.recordio"));
    assertThat(ex).hasSize(150);
    assertThat(ex.get(0).getDenseList()).containsExactly(5.1f, 3.5f, 1.4f, 0.2f);
    assertThat(ex).extracting(Example::getLabel).startsWith(0).endsWith(2).contains(1);
    DatasetInfo info = DatasetInfos.read(dir.resolve("iris.dataset.pb"));
    assertThat(info.getLabelNamesList()).containsExactly("setosa", "versicolor", "virginica");
    assertThat(info.hasFeatureScaling()).isFalse();
    assertThat(info.getFeatures()).isEqualTo(4);
    assertThat(info.getRecords()).isEqualTo(150);
    assertThat(r.out())
        .contains("csv, label column 'species'")
        .contains("label names: 0: setosa, 1: versicolor, 2: virginica")
        .contains("dataset info: " + dir + "/iris.dataset.pb");
  }

  @Test
  void inspect_showsTheDatasetInfoBesideTheData() throws Exception {
    assertThat(
            Run.psctl(
                    "convert",
                    "--input",
                    iris().toString(),
                    "--out",
                    dir + "/ir",
                    "--shards",
                    "2",
                    "--standardize")
                .code())
        .isZero();
    Run r = Run.psctl("inspect", dir + "/ir-*.recordio");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out())
        .containsOnlyOnce(
            dir
                + "/ir.dataset.pb: 4 features, 150 records, label names [setosa, versicolor,"
                + " virginica], standardized (mean and standard deviation stored)");
  }

  @Test
  void quotedFields_namedLabelColumn_firstOfSeveral() throws Exception {
    Path in =
        file(
            "q.csv",
            "\"class\",\"x, the first\",y\n"
                + "\"big, red\",\"1.5\",2\n"
                + "small,\"3\",\" 4 \"\n"
                + "\"say \"\"hi\"\"\",5,6\n");
    Run r =
        Run.psctl(
            "convert",
            "--input",
            in.toString(),
            "--out",
            dir + "/q.recordio",
            "--label-column",
            "class");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(examples(dir.resolve("q.recordio")))
        .extracting(e -> e.getLabel() + ":" + e.getDenseList())
        .containsExactly("0:[1.5, 2.0]", "2:[3.0, 4.0]", "1:[5.0, 6.0]");
    assertThat(DatasetInfos.read(dir.resolve("q.dataset.pb")).getLabelNamesList())
        .containsExactly("big, red", "say \"hi\"", "small");
  }

  @Test
  void missingAndNonNumericValues_nameLineAndColumn() throws Exception {
    Path missing = file("m.csv", "a,b,label\n1,2,x\n3,,y\n");
    Run r = Run.psctl("convert", "--input", missing.toString(), "--out", dir + "/m");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains(missing + " line 3, column 1 (0-based): the value 'b' is missing");
    Path word = file("w.csv", "a,b,label\n1,2,x\n3,abc,y\n");
    assertThat(Run.psctl("convert", "--input", word.toString(), "--out", dir + "/w").err())
        .contains(word + " line 3, column 1 (0-based): feature 'b' 'abc' is not a number");
    Path noLabel = file("n.csv", "1,2,x\n3,4,\n");
    assertThat(Run.psctl("convert", "--input", noLabel.toString(), "--out", dir + "/n").err())
        .contains(noLabel + " line 2, column 2 (0-based): the label is missing");
    Path unknownColumn = file("u.csv", "a,b,label\n1,2,x\n");
    assertThat(
            Run.psctl(
                    "convert",
                    "--input",
                    unknownColumn.toString(),
                    "--out",
                    dir + "/u",
                    "--label-column",
                    "species")
                .err())
        .contains("--label-column 'species' is not a column of the header [a, b, label]");
    Path badQuote = file("bq.csv", "1,2,x\n3,\"4,y\n");
    assertThat(Run.psctl("convert", "--input", badQuote.toString(), "--out", dir + "/bq").code())
        .isEqualTo(1);
  }

  @Test
  void standardize_storesStatistics_andTestDataReusesThemAndTheLabelNames() throws Exception {
    Path train = file("train.csv", "f1,f2,label\n1000,1,b\n3000,1,a\n5000,1,b\n");
    Run r =
        Run.psctl("convert", "--input", train.toString(), "--out", dir + "/tr", "--standardize");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("standardized: mean and standard deviation of 2 features");
    DatasetInfo info = DatasetInfos.read(dir.resolve("tr.dataset.pb"));
    assertThat(info.getFeatureScaling().getMeanList()).containsExactly(3000f, 1f);
    assertThat(info.getFeatureScaling().getScale(0))
        .isCloseTo((float) Math.sqrt(8e6 / 3), within(0.01f));
    assertThat(info.getFeatureScaling().getScale(1)).isEqualTo(1f);
    // the records keep the raw values: scaling is applied where the model reads them
    assertThat(examples(dir.resolve("tr-00000.recordio")).get(0).getDense(0)).isEqualTo(1000f);

    // test data with only one class: the training data's mapping still holds
    Path test = file("test.csv", "f1,f2,label\n7000,2,b\n");
    Run t =
        Run.psctl(
            "convert",
            "--input",
            test.toString(),
            "--out",
            dir + "/te",
            "--statistics-from",
            dir + "/tr.dataset.pb");
    assertThat(t.code()).as(t.err()).isZero();
    DatasetInfo testInfo = DatasetInfos.read(dir.resolve("te.dataset.pb"));
    assertThat(testInfo.getFeatureScaling()).isEqualTo(info.getFeatureScaling());
    assertThat(testInfo.getLabelNamesList()).containsExactly("a", "b");
    assertThat(examples(dir.resolve("te-00000.recordio")).get(0).getLabel()).isEqualTo(1);

    Path wide = file("wide.csv", "1,2,3,b\n");
    assertThat(
            Run.psctl(
                    "convert",
                    "--input",
                    wide.toString(),
                    "--out",
                    dir + "/wi",
                    "--statistics-from",
                    dir + "/tr.dataset.pb")
                .err())
        .contains("has statistics of 2 features, " + wide + " has 3");
    assertThat(dir.resolve("wi-00000.recordio")).doesNotExist();
  }

  @Test
  void standardize_onLibSvm_isAUsageError() throws Exception {
    Path in = file("d.svm", "1 1:2\n");
    Run r = Run.psctl("convert", "--input", in.toString(), "--out", dir + "/s", "--standardize");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("--standardize scales dense features, which only CSV input has");
  }
}
