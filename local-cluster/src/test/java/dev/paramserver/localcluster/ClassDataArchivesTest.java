package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClassDataArchivesTest {
  @TempDir Path dir;
  private Path jar;

  @BeforeEach
  void setUp() throws Exception {
    System.setProperty("paramserver.cds.dir", dir.resolve("cache").toString());
    jar = Files.writeString(dir.resolve("pserver-service-0.1.0-SNAPSHOT-exec.jar"), "not a jar");
  }

  @AfterEach
  void tearDown() {
    System.clearProperty("paramserver.cds.dir");
  }

  private ClusterSpec spec(boolean cds) {
    return ClusterSpec.builder(dir.resolve("run"))
        .job("j")
        .pservers(1)
        .jar(Role.PSERVER, jar)
        .javaBinary("/opt/java")
        .classDataSharing(cds)
        .build();
  }

  private List<String> command(ClusterSpec spec) {
    return ServiceCommand.javaServices()
        .build(
            new ServiceCommand.LaunchContext(
                spec, Role.PSERVER, 0, 8080, 9090, "http://127.0.0.1:2379"));
  }

  @Test
  void withoutAnEntry_theFatJarIsLaunched() {
    assertThat(ClassDataArchives.launchOf(jar))
        .isEqualTo(new ClassDataArchives.Launch(jar, Optional.empty()));
    assertThat(command(spec(true))).containsSubsequence("-jar", jar.toString());
  }

  @Test
  void withAnEntry_theExtractedJarIsLaunchedWithItsArchive() throws Exception {
    Path entry = dir.resolve("cache").resolve(ClassDataArchives.key(jar));
    Path extracted = Files.createDirectories(entry.resolve("app")).resolve(jar.getFileName());
    Files.writeString(extracted, "extracted");
    Path archive = Files.writeString(entry.resolve("app.jsa"), "archive");
    // not used before it is marked ready
    assertThat(command(spec(true))).containsSubsequence("-jar", jar.toString());
    Files.writeString(entry.resolve("ready"), "");

    assertThat(command(spec(true)))
        .containsSubsequence(
            "/opt/java", "-XX:SharedArchiveFile=" + archive, "-jar", extracted.toString())
        .doesNotContain(jar.toString());
    // switched off, the jar itself runs
    assertThat(command(spec(false)))
        .containsSubsequence("-jar", jar.toString())
        .noneMatch(a -> a.startsWith("-XX:SharedArchiveFile"));
  }

  @Test
  void theKeyFollowsTheJarsBytes() throws Exception {
    String before = ClassDataArchives.key(jar);
    Files.writeString(jar, "another build");
    Files.setLastModifiedTime(
        jar, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 5_000));
    assertThat(ClassDataArchives.key(jar))
        .isNotEqualTo(before)
        .startsWith("pserver-service-0.1.0-SNAPSHOT-exec-");
  }

  @Test
  void aJarThatCannotBeExtracted_leavesNoEntry_andLaunchesAsItIs() {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ClassDataArchives.prepare(jar, java, extracted -> List.of("-jar", extracted.toString()));

    assertThat(dir.resolve("cache").resolve(ClassDataArchives.key(jar))).doesNotExist();
    assertThat(dir.resolve("cache").resolve(ClassDataArchives.key(jar) + ".lock")).doesNotExist();
    assertThat(ClassDataArchives.launchOf(jar).jar()).isEqualTo(jar);
  }

  @Test
  void aJdkThatKnowsAotCaches_launchesFromItsOwnEntrysAotCache() throws Exception {
    // a stand-in for a JDK 25 binary: all that is asked of it is its version
    Path jdk25 = dir.resolve("jdk25").resolve("java");
    Files.createDirectories(jdk25.getParent());
    Files.writeString(jdk25, "#!/bin/sh\necho 'openjdk version \"25.0.3\" 2026-04-21 LTS' >&2\n");
    jdk25.toFile().setExecutable(true);
    assertThat(ClassDataArchives.feature(jdk25.toString())).isEqualTo(25);
    assertThat(ClassDataArchives.key(jar, jdk25.toString()))
        .isEqualTo(ClassDataArchives.key(jar) + "-jdk25");

    Path entry = dir.resolve("cache").resolve(ClassDataArchives.key(jar, jdk25.toString()));
    Path extracted = Files.createDirectories(entry.resolve("app")).resolve(jar.getFileName());
    Files.writeString(extracted, "extracted");
    Path cache = Files.writeString(entry.resolve("app.aot"), "cache");
    Files.writeString(entry.resolve("ready"), "");

    ClassDataArchives.Launch launch = ClassDataArchives.launchOf(jar, jdk25.toString());
    assertThat(launch.jar()).isEqualTo(extracted);
    assertThat(launch.jvmOptions()).containsExactly("-XX:AOTCache=" + cache);
    // a JDK 17 never gets the option it would refuse: it has no entry of its own yet
    assertThat(ClassDataArchives.launchOf(jar, null).archive()).isEmpty();
  }

  @Test
  void theFeatureOfThisJvmsOwnBinary_isReadWithoutStartingIt_andAnUnknownBinaryCountsAsOld() {
    String own = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    assertThat(ClassDataArchives.feature(own)).isEqualTo(Runtime.version().feature());
    assertThat(ClassDataArchives.feature(dir.resolve("no-such-java").toString())).isZero();
    assertThat(ClassDataArchives.aotCache(null)).isFalse();
  }
}
