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
  void missingJars_exitTwoNamingThemAndHowToBuild() throws Exception {
    Path train = Files.createFile(dir.resolve("train.recordio"));
    assertThat(
            run(
                "--train",
                train.toString(),
                "--jar-dir",
                dir.toString(),
                "--run-dir",
                dir.toString()))
        .isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("master-service-*-exec.jar", "trainer-agent-*-exec.jar", "mvnw");
  }

  @Test
  void trainGlobMatchingNothing_exitsTwoAtOnce_namingTheGlob() throws Exception {
    long t0 = System.nanoTime();
    assertThat(run("--train", dir + "/missing/*.recordio", "--run-dir", dir.toString()))
        .isEqualTo(2);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("run-local: --train '" + dir + "/missing/*.recordio': no file matches");
    Path train = Files.createFile(dir.resolve("train.recordio"));
    err.reset();
    assertThat(
            run(
                "--train",
                train.toString(),
                "--test",
                "nowhere/*.rio",
                "--run-dir",
                dir.toString()))
        .isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("run-local: --test 'nowhere/*.rio': no file matches (relative to ");
    err.reset();
    assertThat(
            run(
                "--train",
                train.toString(),
                "--init-from",
                dir.resolve("none.pb").toString(),
                "--run-dir",
                dir.toString()))
        .isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("run-local: --init-from " + dir.resolve("none.pb") + ": no such file");
  }

  @Test
  void trainingOptions_becomeTrainerProperties() {
    RunOptions o =
        RunOptions.parse(
            "--train",
            "/d/*.rio",
            "--optimizer",
            "ADAM",
            "--beta1",
            "0.8",
            "--beta2",
            "0.99",
            "--epsilon",
            "1e-7",
            "--momentum",
            "0.5",
            "--weight-decay",
            "0.01",
            "--clip-value",
            "2",
            "--clip-norm",
            "5",
            "--lr-schedule",
            "warmup_cosine",
            "--lr-warmup-steps",
            "10",
            "--lr-total-steps",
            "100",
            "--lr-min",
            "0.001",
            "--lr-step-size",
            "7",
            "--lr-gamma",
            "0.5",
            "--mode",
            "bounded-staleness",
            "--staleness",
            "3",
            "--sparse-optimizer",
            "adagrad",
            "--sparse-lr",
            "0.05",
            "--init-from",
            "/m/model.pb");
    Map<String, String> trainer = RunLocal.spec(o, Map.of()).extraProperties(Role.TRAINER);
    assertThat(trainer)
        .containsEntry("paramserver.trainer.optimizer", "adam")
        .containsEntry("paramserver.trainer.beta1", "0.8")
        .containsEntry("paramserver.trainer.beta2", "0.99")
        .containsEntry("paramserver.trainer.epsilon", "1e-7")
        .containsEntry("paramserver.trainer.momentum", "0.5")
        .containsEntry("paramserver.trainer.weight-decay", "0.01")
        .containsEntry("paramserver.trainer.clip-value", "2")
        .containsEntry("paramserver.trainer.clip-norm", "5")
        .containsEntry("paramserver.trainer.lr-schedule", "warmup-cosine")
        .containsEntry("paramserver.trainer.lr-warmup-steps", "10")
        .containsEntry("paramserver.trainer.lr-total-steps", "100")
        .containsEntry("paramserver.trainer.lr-min", "0.001")
        .containsEntry("paramserver.trainer.lr-step-size", "7")
        .containsEntry("paramserver.trainer.lr-gamma", "0.5")
        .containsEntry("paramserver.trainer.mode", "bounded-staleness")
        .containsEntry("paramserver.trainer.staleness", "3")
        .containsEntry("paramserver.trainer.sparse.optimizer", "adagrad")
        .containsEntry("paramserver.trainer.sparse.learning-rate", "0.05")
        .containsEntry("paramserver.trainer.init-from", "/m/model.pb");
  }

  @Test
  void jarLocator_findsFlatAndPerModuleLayouts() throws Exception {
    Path flat = Files.createDirectories(dir.resolve("flat"));
    for (Role r : Role.values()) {
      Files.createFile(flat.resolve(r.module() + "-0.1.0-SNAPSHOT-exec.jar"));
    }
    assertThat(JarLocator.locate(flat)).hasSize(4).containsKey(Role.SERVING);
    // serving-service's jar is used when built, not required
    Files.delete(flat.resolve(Role.SERVING.module() + "-0.1.0-SNAPSHOT-exec.jar"));
    assertThat(JarLocator.locate(flat)).hasSize(3).doesNotContainKey(Role.SERVING);

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
