package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The end-to-end tests' guard against jars older than their sources. */
@Timeout(30)
class JarLocatorTest {
  private static final Instant BUILT = Instant.parse("2026-01-01T10:00:00Z");

  @TempDir Path repo;
  private Path jar;

  @BeforeEach
  void repository() throws Exception {
    module(
        "pserver-service",
        dependency("optimizers", null) + dependency("test-support", "test"),
        "dev/paramserver/pserver/Pserver.java");
    module("optimizers", "", "dev/paramserver/optimizers/SgdRule.java");
    module("test-support", "", "dev/paramserver/testsupport/Poll.java");
    jar =
        Files.createFile(
            repo.resolve("pserver-service/target/pserver-service-0.1.0-SNAPSHOT-exec.jar"));
    Files.setLastModifiedTime(jar, FileTime.from(BUILT));
  }

  @Test
  void jarNewerThanEverySource_isAccepted() {
    assertThatCode(() -> JarLocator.requireNewerThanSources(jar, repo, "pserver-service"))
        .doesNotThrowAnyException();
  }

  @Test
  void sourceOfTheModuleChangedAfterTheBuild_isRefusedWithTheRebuildCommand() throws Exception {
    touchAfterBuild("pserver-service/src/main/java/dev/paramserver/pserver/Pserver.java");
    assertThatThrownBy(() -> JarLocator.requireNewerThanSources(jar, repo, "pserver-service"))
        .isInstanceOf(LocalClusterException.class)
        .hasMessageContaining("pserver-service-0.1.0-SNAPSHOT-exec.jar")
        .hasMessageContaining("is older than pserver-service/src/main/java/")
        .hasMessageContaining("rebuild with ./mvnw -B -DskipTests package");
  }

  @Test
  void sourceOfADependencyChangedAfterTheBuild_isRefused() throws Exception {
    touchAfterBuild("optimizers/src/main/java/dev/paramserver/optimizers/SgdRule.java");
    assertThatThrownBy(() -> JarLocator.requireNewerThanSources(jar, repo, "pserver-service"))
        .isInstanceOf(LocalClusterException.class)
        .hasMessageContaining("is older than optimizers/src/main/java/");
  }

  @Test
  void testScopedDependencyAndTestSources_doNotCount() throws Exception {
    touchAfterBuild("test-support/src/main/java/dev/paramserver/testsupport/Poll.java");
    Path test = repo.resolve("pserver-service/src/test/java/PserverTest.java");
    Files.createDirectories(test.getParent());
    Files.writeString(test, "class PserverTest {}");
    touchAfterBuild("pserver-service/src/test/java/PserverTest.java");
    assertThatCode(() -> JarLocator.requireNewerThanSources(jar, repo, "pserver-service"))
        .doesNotThrowAnyException();
  }

  private void module(String name, String dependencies, String source) throws Exception {
    Path dir = Files.createDirectories(repo.resolve(name).resolve("target"));
    Files.writeString(
        dir.resolveSibling("pom.xml"),
        "<project><artifactId>"
            + name
            + "</artifactId><dependencies>"
            + dependencies
            + "</dependencies></project>");
    Path file = repo.resolve(name).resolve("src/main/java").resolve(source);
    Files.createDirectories(file.getParent());
    Files.writeString(file, "class X {}");
    Files.setLastModifiedTime(file, FileTime.from(BUILT.minusSeconds(60)));
  }

  private static String dependency(String artifact, String scope) {
    return "<dependency>\n  <groupId>dev.paramserver</groupId>\n  <artifactId>"
        + artifact
        + "</artifactId>\n"
        + (scope == null ? "" : "  <scope>" + scope + "</scope>\n")
        + "</dependency>";
  }

  private void touchAfterBuild(String file) throws Exception {
    Files.setLastModifiedTime(repo.resolve(file), FileTime.from(BUILT.plusSeconds(60)));
  }
}
