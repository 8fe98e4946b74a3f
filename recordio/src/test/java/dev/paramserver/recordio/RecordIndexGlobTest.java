package dev.paramserver.recordio;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RecordIndexGlobTest {
  @TempDir Path dir;
  private Path a;
  private Path b;
  private Path c;

  @BeforeEach
  void files() throws IOException {
    a = Files.createFile(dir.resolve("train-00001.recordio")).toAbsolutePath();
    b = Files.createFile(dir.resolve("train-00000.recordio")).toAbsolutePath();
    c = Files.createFile(dir.resolve("test-00000.recordio")).toAbsolutePath();
    Files.createDirectories(dir.resolve("sub"));
    Files.createFile(dir.resolve("sub/train-9.recordio"));
  }

  @Test
  void prefixGlob_skipsTheDatasetInfoFileBesideTheData() throws IOException {
    // psctl convert writes PREFIX-00000.recordio and PREFIX.dataset.pb side by side
    Files.createFile(dir.resolve("train.dataset.pb"));

    assertThat(RecordIndex.expandGlobs(List.of(dir + "/train*"))).containsExactly(b, a);
  }

  @Test
  void globMatchingOnlyDatasetInfoFiles_failsNamingThemAndTheGlob() throws IOException {
    Path info = Files.createFile(dir.resolve("train.dataset.pb")).toAbsolutePath();

    assertThatThrownBy(() -> RecordIndex.expandGlobs(List.of(dir + "/*.pb")))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("'" + dir + "/*.pb' matches only the dataset info file(s) [" + info)
        .hasMessageContaining("PREFIX-*.recordio");
  }

  @Test
  void absoluteGlob_isSortedAndSkipsSubdirectories() throws IOException {
    assertThat(RecordIndex.expandGlobs(List.of(dir + "/train-*.recordio"))).containsExactly(b, a);
  }

  @Test
  void overlappingGlobsAndPlainPaths_areDeduplicated() throws IOException {
    assertThat(
            RecordIndex.expandGlobs(
                List.of(dir + "/*.recordio", a.toString(), dir + "/train-0000[01].recordio")))
        .containsExactly(c, b, a);
  }

  @Test
  void relativeGlob_resolvesAgainstWorkingDirectory() throws IOException {
    Path cwd = Paths.get("").toAbsolutePath();
    String rel = cwd.relativize(dir.toAbsolutePath()) + "/test-*.recordio";
    assertThat(RecordIndex.expandGlobs(List.of(rel))).containsExactly(c);
  }

  @Test
  void doubleStar_crossesDirectories() throws IOException {
    assertThat(RecordIndex.expandGlobs(List.of(dir + "/**/train-9.recordio")))
        .containsExactly(dir.resolve("sub/train-9.recordio").toAbsolutePath());
  }

  @Test
  void globMatchingNothing_namesTheGlob() {
    String g = dir + "/nothing-*.recordio";
    assertThatThrownBy(() -> RecordIndex.expandGlobs(List.of(dir + "/*.recordio", g)))
        .isInstanceOf(IOException.class)
        .hasMessage("no file matches '" + g + "'");
    assertThatThrownBy(() -> RecordIndex.expandGlobs(List.of(dir + "/missing.recordio")))
        .hasMessageContaining("missing.recordio");
    assertThatThrownBy(() -> RecordIndex.expandGlobs(List.of(dir + "/nodir/*.recordio")))
        .hasMessageContaining("nodir");
  }
}
