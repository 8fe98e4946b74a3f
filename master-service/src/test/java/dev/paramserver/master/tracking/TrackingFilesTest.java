package dev.paramserver.master.tracking;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.master.config.MasterProperties;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrackingFilesTest {
  @TempDir Path dir;

  private static MasterProperties.Tracking tracking(Path dir, Path metrics, Path tensorboard) {
    return new MasterProperties.Tracking(true, dir, metrics, tensorboard, 1000);
  }

  @Test
  void aSetDirectoryHoldsTheMetricsFileAndTheEventFiles() {
    TrackingFiles f = TrackingFiles.resolve(tracking(dir.resolve("job"), null, null), "demo");
    assertThat(f.metricsFile()).isEqualTo(dir.resolve("job").resolve("metrics.jsonl"));
    assertThat(f.tensorboardDir()).isEqualTo(dir.resolve("job"));
    assertThat(dir.resolve("job")).isDirectory().isEmptyDirectory();
  }

  @Test
  void theMetricsFileAndTheTensorboardDirectoryOverrideTheDirectory() {
    TrackingFiles f =
        TrackingFiles.resolve(
            tracking(dir.resolve("job"), dir.resolve("m/metrics.jsonl"), dir.resolve("tb")),
            "demo");
    assertThat(f.metricsFile()).isEqualTo(dir.resolve("m/metrics.jsonl"));
    assertThat(f.tensorboardDir()).isEqualTo(dir.resolve("tb"));
    assertThat(dir.resolve("tb")).isDirectory();
  }

  @Test
  void aSetDirectoryThatCannotBeWritten_stopsTheMasterNamingTheProperty() throws Exception {
    Path file = Files.writeString(dir.resolve("a-file"), "x");
    assertThatThrownBy(
            () -> TrackingFiles.resolve(tracking(file.resolve("job"), null, null), "demo"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("paramserver.master.tracking.dir")
        .hasMessageContaining(file.resolve("job").toString());
    assertThatThrownBy(
            () ->
                TrackingFiles.resolve(
                    tracking(dir.resolve("ok"), null, file.resolve("tb")), "demo"))
        .hasMessageContaining("paramserver.master.tracking.tensorboard-dir");
  }

  @Test
  void theDefaultDirectoryIsPerJobUnderTheTemporaryDirectory_andOffWhenItCannotBeWritten()
      throws Exception {
    String tmp = System.getProperty("java.io.tmpdir");
    try {
      System.setProperty("java.io.tmpdir", dir.toString());
      TrackingFiles f = TrackingFiles.resolve(MasterProperties.Tracking.defaults(), "demo");
      assertThat(f.metricsFile())
          .isEqualTo(dir.resolve("paramserver-tracking").resolve("demo").resolve("metrics.jsonl"));
      assertThat(f.enabled()).isTrue();

      Path file = Files.writeString(dir.resolve("a-file"), "x");
      System.setProperty("java.io.tmpdir", file.toString());
      TrackingFiles off = TrackingFiles.resolve(MasterProperties.Tracking.defaults(), "demo");
      assertThat(off.enabled()).isFalse();
    } finally {
      System.setProperty("java.io.tmpdir", tmp);
    }
  }

  @Test
  void switchedOff_nothingIsWritten() {
    assertThat(TrackingFiles.resolve(MasterProperties.Tracking.off(), "demo").enabled()).isFalse();
  }
}
