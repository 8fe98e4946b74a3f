package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InRunRecordingsTest {
  @TempDir Path dir;
  private Path jar;
  private ClusterSpec spec;

  @BeforeEach
  void setUp() throws Exception {
    System.setProperty("paramserver.cds.dir", dir.resolve("cache").toString());
    jar = Files.writeString(dir.resolve("pserver-service-0.1.0-SNAPSHOT-exec.jar"), "not a jar");
    spec =
        ClusterSpec.builder(dir.resolve("run"))
            .job("j")
            .pservers(2)
            .jar(Role.PSERVER, jar)
            .javaBinary(Path.of(System.getProperty("java.home"), "bin", "java").toString())
            .archiveTrainingJob(true)
            .build();
    // a fake extraction: the recording's entry gets a file where the extracted jar goes
    InRunRecordings.begin(
        spec,
        role ->
            ClassDataArchives.begin(
                jar,
                spec.javaBinary(),
                (j, app, log) ->
                    Files.writeString(
                        Files.createDirectories(app).resolve(j.getFileName()), "extracted")));
  }

  @AfterEach
  void tearDown() {
    InRunRecordings.finish(spec);
    System.clearProperty("paramserver.cds.dir");
  }

  private List<String> command(int index) {
    return ServiceCommand.javaServices()
        .build(
            new ServiceCommand.LaunchContext(
                spec, Role.PSERVER, index, 8080, 9090, "http://127.0.0.1:2379"));
  }

  private Path entry() {
    return dir.resolve("cache").resolve(ClassDataArchives.key(jar, spec.javaBinary()));
  }

  @Test
  void theFirstProcessRecords_theOthersRunTheExtractedJarOnly() {
    Path extracted = entry().resolve("app").resolve(jar.getFileName());
    assertThat(InRunRecordings.recording(spec)).isTrue();
    assertThat(command(0))
        .contains("-XX:AOTCacheOutput=" + entry().resolve("app.aot.part"))
        .containsSubsequence("-jar", extracted.toString());
    assertThat(command(1))
        .noneMatch(a -> a.startsWith("-XX:AOTCache"))
        .containsSubsequence("-jar", extracted.toString());
  }

  @Test
  void finish_withoutAWrittenCache_dropsTheEntry_andTheNextRunStartsFromTheJar() {
    assertThat(InRunRecordings.finish(spec)).isEmpty();
    assertThat(Files.exists(entry())).isFalse();
    assertThat(InRunRecordings.recording(spec)).isFalse();
    assertThat(command(0)).containsSubsequence("-jar", jar.toString());
  }

  @Test
  void finish_withACacheNoJvmCanMap_dropsIt_insteadOfUsingHalfACache() throws Exception {
    // what a run killed while writing its cache leaves
    Files.writeString(entry().resolve("app.aot.part"), "half a cache");
    assertThat(InRunRecordings.finish(spec)).isEmpty();
    assertThat(Files.exists(entry())).isFalse();
    assertThat(ClassDataArchives.launchOf(jar, spec.javaBinary()).archive()).isEmpty();
  }
}
