package dev.paramserver.psctl.demo;

import static dev.paramserver.psctl.Records.examples;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.psctl.Run;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code psctl demo-data}: options reach the generator, results and usage errors are printed. */
class DemoDataCommandTest {
  @TempDir Path dir;

  @Test
  void command_printsPathsAndCounts() throws Exception {
    Run r =
        Run.psctl(
            "demo-data",
            "--out",
            dir.toString(),
            "--train",
            "300",
            "--test",
            "100",
            "--shards",
            "3",
            "--features",
            "20");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out())
        .contains("train: " + dir.resolve("train-00002.recordio"))
        .contains("test:  " + dir.resolve("test-00000.recordio"))
        .contains("dense data: 300 train + 100 test records, 10 classes, 20 features, seed 42");
    assertThat(examples(dir.resolve("train-00002.recordio"))).hasSize(100);
  }

  @Test
  void command_invalidOptions_areUsageErrors() {
    Run r = Run.psctl("demo-data", "--out", dir.toString(), "--classes", "1");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("classes must be >= 2, got 1");
  }
}
