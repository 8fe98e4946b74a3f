package dev.paramserver.psctl.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.localcluster.RunOptions;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.psctl.Run;
import dev.paramserver.recordio.RecordIndex;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code psctl run-local}: the shared options, the usage errors, and the input preparation that
 * used to live in scripts/run-local.sh. Nothing here starts a cluster.
 */
@Timeout(120)
class RunLocalCommandTest {
  @TempDir Path dir;
  private final StringWriter out = new StringWriter();

  @Test
  void help_listsTheRunLocalOptions_andExitsZero() {
    Run r = Run.psctl("run-local", "--help");
    assertThat(r.code()).isZero();
    assertThat(r.out())
        .contains("RESULT accuracy=<a> loss=<l> samples_per_s=<s> elapsed_s=<t> train_s=<t>")
        .contains(
            "--train=GLOB",
            "--test=GLOB",
            "--demo-data=DIR",
            "--model=NAME",
            "--hidden=SIZES",
            "--optimizer=NAME",
            "--lr=X",
            "--batch-size=B",
            "--passes=N",
            "--sync",
            "--format=F",
            "--masters=K",
            "--pservers=N",
            "--trainers=M",
            "--run-dir=DIR",
            "--job=NAME",
            "--timeout=DURATION",
            "--jar-dir=DIR",
            "--set=ROLE.KEY=VALUE");
  }

  @Test
  void badOption_isAUsageErrorNamingIt() {
    Run r = Run.psctl("run-local", "--passes", "zero");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err())
        .contains("psctl run-local: Invalid value for option '--passes'")
        .contains("expects a whole number, got 'zero'");
  }

  @Test
  void trainAndDemoDataTogether_isAUsageError() {
    Run r = Run.psctl("run-local", "--train", "x", "--demo-data", "d", "--run-dir", dir.toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("pass either --train or --demo-data, not both");
  }

  @Test
  void noInput_generatesTheDemoDataIntoTheRunFolder() throws Exception {
    RunOptions o = options("--run-dir", dir.toString());
    new RunInput(new PrintWriter(out, true), args -> 1).prepare(o);

    assertThat(o.demoData()).isEqualTo(dir.resolve("data"));
    assertThat(RecordIndex.expandGlobs(List.of(dir.resolve("data/train-*.recordio").toString())))
        .hasSize(4);
    assertThat(Files.isRegularFile(dir.resolve("data/test-00000.recordio"))).isTrue();
    assertThat(out.toString())
        .contains("generating demo data into " + dir.resolve("data"))
        .contains("60000 train + 10000 test records, 10 classes, 32 features");
    o.validate();
  }

  @Test
  void libsvm_isConvertedToRecordIoShards_andTheOptionsPointAtThem() throws Exception {
    Path train = Files.writeString(dir.resolve("a.libsvm"), "+1 1:0.5 3:1\n-1 2:1\n+1 4:2\n");
    Path test = Files.writeString(dir.resolve("t.libsvm"), "-1 1:1\n");
    Path run = dir.resolve("run");
    RunOptions o =
        options(
            "--format",
            "libsvm",
            "--train",
            train.toString(),
            "--test",
            test.toString(),
            "--run-dir",
            run.toString());
    new RunInput(new PrintWriter(out, true), RunLocalCommandTest::psctlConvert).prepare(o);

    assertThat(o.isLibSvm()).isFalse();
    assertThat(o.train()).isEqualTo(run.resolve("data/train-*.recordio").toString());
    assertThat(o.test()).isEqualTo(run.resolve("data/test-*.recordio").toString());
    assertThat(RecordIndex.expandGlobs(List.of(o.train()))).hasSize(2);
    assertThat(RecordIndex.expandGlobs(List.of(o.test()))).hasSize(2);
    o.validate();
  }

  @Test
  void csv_isConvertedStandardized_andTheTestFilesReuseTheTrainingStatistics() throws Exception {
    Path train =
        Files.writeString(dir.resolve("tr.csv"), "x,y,kind\n1000,1,b\n3000,2,a\n5000,3,b\n");
    Path test = Files.writeString(dir.resolve("te.csv"), "x,y,kind\n2000,2,b\n");
    Path run = dir.resolve("csvrun");
    RunOptions o =
        options(
            "--format",
            "csv",
            "--standardize",
            "--train",
            train.toString(),
            "--test",
            test.toString(),
            "--run-dir",
            run.toString());
    new RunInput(new PrintWriter(out, true), RunLocalCommandTest::psctlConvert).prepare(o);

    assertThat(o.isCsv()).isFalse();
    assertThat(o.train()).isEqualTo(run.resolve("data/train-*.recordio").toString());
    assertThat(o.test()).isEqualTo(run.resolve("data/test-*.recordio").toString());
    DatasetInfo trainInfo = DatasetInfos.read(run.resolve("data/train.dataset.pb"));
    assertThat(trainInfo.getLabelNamesList()).containsExactly("a", "b");
    assertThat(trainInfo.getFeatureScaling().getMeanList()).containsExactly(3000f, 2f);
    DatasetInfo testInfo = DatasetInfos.read(run.resolve("data/test-0.dataset.pb"));
    assertThat(testInfo.getFeatureScaling()).isEqualTo(trainInfo.getFeatureScaling());
    assertThat(testInfo.getLabelNamesList()).containsExactly("a", "b");
    o.validate();
  }

  @Test
  void csv_withSeveralTrainingFiles_isAUsageError() throws Exception {
    Files.writeString(dir.resolve("p1.csv"), "1,a\n");
    Files.writeString(dir.resolve("p2.csv"), "2,b\n");
    RunInput input = new RunInput(new PrintWriter(out, true), args -> 0);
    assertThatThrownBy(
            () ->
                input.prepare(
                    options(
                        "--format",
                        "csv",
                        "--train",
                        dir + "/p*.csv",
                        "--run-dir",
                        dir.toString())))
        .isInstanceOf(RunOptions.UsageException.class)
        .hasMessageContaining("--format csv takes one training file")
        .hasMessageContaining("matches 2");
  }

  @Test
  void libsvm_withoutTrain_orWithNoMatchingFile_isAUsageError() {
    RunInput input = new RunInput(new PrintWriter(out, true), args -> 0);
    assertThatThrownBy(() -> input.prepare(options("--format", "libsvm")))
        .isInstanceOf(RunOptions.UsageException.class)
        .hasMessageContaining("--format libsvm needs --train FILE");
    String missing = dir.resolve("none-*.libsvm").toString();
    assertThatThrownBy(
            () ->
                input.prepare(
                    options("--format", "libsvm", "--train", missing, "--run-dir", dir.toString())))
        .isInstanceOf(RunOptions.UsageException.class)
        .hasMessageContaining("no file matches '" + missing + "'");
  }

  private static RunOptions options(String... args) {
    RunOptions o = new RunOptions();
    new CommandLine(o).parseArgs(args);
    return o;
  }

  private static int psctlConvert(String... args) {
    String[] all = new String[args.length + 1];
    all[0] = "convert";
    System.arraycopy(args, 0, all, 1, args.length);
    return Psctl.commandLine().execute(all);
  }
}
