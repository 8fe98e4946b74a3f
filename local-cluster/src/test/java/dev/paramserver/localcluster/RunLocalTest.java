package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunLocalTest {
  @TempDir Path dir;
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) {
    return new RunLocal(
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8))
        .execute(args);
  }

  @Test
  void help_printsUsageAndExitsZero() {
    assertThat(run("--help")).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8))
        .contains("--train=GLOB", "--set=ROLE.KEY=VALUE", "RESULT accuracy=");
  }

  @Test
  void badOption_exitsTwoWithTheReason() {
    assertThat(run("--train", "x", "--passes", "zero")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains(
            "run-local: Invalid value for option '--passes': expects a whole number, got 'zero'")
        .contains("Usage: run-local");
  }

  @Test
  void missingJars_exitTwoNamingThemAndHowToBuild() {
    assertThat(run("--train", "x", "--jar-dir", dir.toString(), "--run-dir", dir.toString()))
        .isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("master-service-*-exec.jar", "trainer-agent-*-exec.jar", "mvnw");
  }

  @Test
  void jarLocator_findsFlatAndPerModuleLayouts() throws Exception {
    Path flat = Files.createDirectories(dir.resolve("flat"));
    for (Role r : Role.values()) {
      Files.createFile(flat.resolve(r.module() + "-0.1.0-SNAPSHOT-exec.jar"));
    }
    assertThat(JarLocator.locate(flat)).hasSize(3);

    Path repo = dir.resolve("repo");
    for (Role r : Role.values()) {
      Path target = Files.createDirectories(repo.resolve(r.module()).resolve("target"));
      Files.createFile(target.resolve(r.module() + "-0.1.0-SNAPSHOT.jar")); // not the exec jar
      Files.createFile(target.resolve(r.module() + "-0.1.0-SNAPSHOT-exec.jar"));
    }
    assertThat(ClusterSpec.builder(dir.resolve("run")).serviceJars(repo).build().jar(Role.MASTER))
        .isEqualTo(repo.resolve("master-service/target/master-service-0.1.0-SNAPSHOT-exec.jar"));
    Map<Role, Path> jars = JarLocator.locate(repo);
    assertThat(jars.get(Role.PSERVER))
        .isEqualTo(repo.resolve("pserver-service/target/pserver-service-0.1.0-SNAPSHOT-exec.jar"));
  }

  @Test
  void spec_mapsOptionsToServiceProperties() {
    RunOptions o =
        RunOptions.parse(
            "--demo-data",
            "/d",
            "--passes",
            "4",
            "--lr",
            "0.05",
            "--hidden",
            "32",
            "--sync",
            "--run-dir",
            dir.toString(),
            "--set",
            "trainer.paramserver.trainer.batch-size=7");

    ClusterSpec spec = RunLocal.spec(o, Map.of());

    assertThat(spec.extraProperties(Role.MASTER)).containsEntry("paramserver.master.passes", "4");
    assertThat(spec.extraProperties(Role.TRAINER))
        .containsEntry("paramserver.trainer.train-data", "/d/train-*.recordio")
        .containsEntry("paramserver.trainer.test-data", "/d/test-*.recordio")
        .containsEntry("paramserver.trainer.model", "softmax")
        .containsEntry("paramserver.trainer.optimizer", "sgd")
        .containsEntry("paramserver.trainer.learning-rate", "0.05")
        .containsEntry("paramserver.trainer.hidden", "32")
        .containsEntry("paramserver.trainer.sync", "true")
        .containsEntry("paramserver.trainer.batch-size", "7")
        .containsEntry("paramserver.trainer.model-output", dir.resolve("model.pb").toString())
        .containsEntry("paramserver.trainer.onnx-output", dir.resolve("model.onnx").toString());
    assertThat(spec.count(Role.PSERVER)).isEqualTo(2);
    assertThat(spec.startTimeout()).isEqualTo(Duration.ofMinutes(15));
    assertThat(spec.adminToken()).matches("[0-9a-f]{32}");
    assertThat(RunLocal.absoluteGlob("data/t-*.rio"))
        .isEqualTo(Path.of("").toAbsolutePath().resolve("data/t-*.rio").toString());
    // object-store globs go to the services as they are
    assertThat(RunLocal.absoluteGlob("s3://ml/iris/iris-*.recordio"))
        .isEqualTo("s3://ml/iris/iris-*.recordio");
  }
}
