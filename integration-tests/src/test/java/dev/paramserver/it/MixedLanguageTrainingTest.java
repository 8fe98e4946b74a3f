package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.it.PythonProcesses.Python;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.testsupport.Poll;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * A Java trainer and a Python trainer train one job (issue 30): real etcd, a master, two pservers
 * and a Java trainer coordinated by the master as processes, and {@code
 * examples/python/train_mlp.py} with PyTorch as another process. The Python trainer joins with its
 * own module's specs (not {@code --adopt}), so the job running proves that {@code
 * paramserver.torch.models.MLP} has the Java MLP's parameter names, shapes, block size and
 * optimizer; both trainers take tasks, every task of every pass is done and the model reaches the
 * accuracy of the same job trained by two Java trainers (run first, as the baseline). Meanwhile a
 * Python trainer with another hidden size is refused at its join, naming the first difference.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class MixedLanguageTrainingTest {
  private static final int PASSES = 2;
  private static final String HIDDEN = "32";
  private static final String LEARNING_RATE = "0.1";
  private static final String BATCH = "64";

  /**
   * Debian's Python only. The jobs wait for both their trainers before the first task ({@code
   * paramserver.master.min-trainers=2}): with the venv's PyTorch 2.x the Python trainer took longer
   * to start than the Java trainer took to finish the job (a clean-clone CI run: py-0 joined after
   * every task was taken and trained none). The venv stack is covered by PythonClientUnitTest,
   * PythonTrainerKillTest, PythonElasticScalingTest and PythonClickThroughTest.
   */
  static List<Python> debianPython() {
    return PythonProcesses.interpreters().stream().filter(p -> p.name().equals("debian")).toList();
  }

  /** The two-Java-trainer baseline's accuracy and time, measured by the first Python's run. */
  private static Double javaOnly;

  private static double javaSeconds;

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}")
  @MethodSource("debianPython")
  void javaAndPythonTrainersOfOneModel_trainTheJobAsWellAsJavaAlone_andAMismatchedModuleIsRefused(
      Python interpreter) throws Exception {
    PythonProcesses.assumeUsable(interpreter, dir, true);
    Path data = dir.resolve("data");
    DemoData.Result demo =
        DemoData.generate(
            data, DemoData.Options.builder().train(12000).test(2000).shards(2).build());
    String train = data + "/train-*.recordio";
    String test = demo.testFile().toString();

    long started = System.nanoTime();
    if (javaOnly == null) { // the baseline, once for every Python (the same data: same seeds)
      try (LocalCluster cluster = new LocalCluster(spec("java-only", 2, train, test))) {
        cluster.start();
        JobStatusView end = awaitEvaluatedEnd(cluster);
        Jobs.assertEveryTaskDoneInEveryPass(end, PASSES);
        javaOnly = end.passes().get(PASSES - 1).evalAccuracy();
        Jobs.stopTrainers(cluster);
      }
      javaSeconds = (System.nanoTime() - started) / 1e9;
    }

    started = System.nanoTime();
    Path pyLog = dir.resolve("py-0.log");
    Path wrongLog = dir.resolve("py-wrong.log");
    Process py = null;
    Process wrong = null;
    try (LocalCluster cluster = new LocalCluster(spec("mixed", 1, train, test))) {
      cluster.start();
      String master = "127.0.0.1:" + cluster.process(Role.MASTER, 0).grpcPort();
      // with the job's admin token, the Python trainer serves its progress as a Java trainer does
      py =
          PythonProcesses.start(
              interpreter,
              pyLog,
              Map.of("PARAMSERVER_ADMIN_TOKEN", cluster.adminToken()),
              trainerArgs(master, "py-0", HIDDEN, train, test));
      Process python = py;

      // while training: the Java and the Python trainer are members, on the master's console,
      // the Python trainer with its progress read from its /admin/status as the Java trainer's
      Poll.until(
          Duration.ofMinutes(2),
          Duration.ofMillis(200),
          () -> {
            JsonNode p = PythonProcesses.consoleTrainer(cluster, "py-0");
            return PythonProcesses.consoleTrainers(cluster).contains("trainer-0")
                    && p.path("samples").asLong() > 0
                    && p.path("lastReport").isNumber()
                || !python.isAlive();
          },
          "trainer-0, and py-0 with its progress, on the master's console");
      JsonNode pyOnConsole = PythonProcesses.consoleTrainer(cluster, "py-0");
      assertThat(PythonProcesses.consoleTrainers(cluster))
          .as("the console's trainers; py-0 (alive %s):\n%s", python.isAlive(), tail(pyLog))
          .contains("trainer-0", "py-0");
      assertThat(pyOnConsole.path("state").asString())
          .as("py-0's state on the console: %s", pyOnConsole)
          .isIn("TRAINING", "FINISHED");
      assertThat(pyOnConsole.path("samples").asLong()).as("py-0's samples").isPositive();
      assertThat(pyOnConsole.path("tasksDone").isNumber())
          .as("py-0's tasks done: %s", pyOnConsole)
          .isTrue();
      assertThat(pyOnConsole.path("error").asString()).as("py-0's status error").isEmpty();

      // the job's model is defined by now: a module with another hidden size is refused at join
      wrong =
          PythonProcesses.start(
              interpreter, wrongLog, trainerArgs(master, "py-wrong", "16", train, test));
      assertThat(wrong.waitFor(2, TimeUnit.MINUTES)).as("the mismatched trainer exits").isTrue();
      String refusal = PythonProcesses.read(wrongLog);
      assertThat(wrong.exitValue()).as("its exit code; output:\n%s", refusal).isEqualTo(1);
      assertThat(refusal)
          .as("its output names the first difference")
          .contains("MODEL_MISMATCH")
          .containsPattern("hidden1\\.w'?: shape \\[\\d+, 16\\] here, \\[\\d+, 32\\] in the job")
          .doesNotContain("PYRESULT");

      JobStatusView end = awaitEvaluatedEnd(cluster);
      assertThat(py.waitFor(2, TimeUnit.MINUTES))
          .as("py-0 exits once the job is finished")
          .isTrue();
      assertThat(py.exitValue()).as("py-0's exit code; output:\n%s", tail(pyLog)).isZero();
      String pyTasks = PythonProcesses.pyresult(pyLog, "tasks");
      assertThat(pyTasks).as("py-0's PYRESULT line:\n%s", tail(pyLog)).isNotNull();
      assertThat(Integer.parseInt(pyTasks)).as("tasks trained by py-0").isPositive();
      Jobs.assertEveryTaskDoneInEveryPass(end, PASSES);
      double mixed = end.passes().get(PASSES - 1).evalAccuracy();
      Jobs.stopTrainers(cluster);
      String report =
          String.format(
              Locale.ROOT,
              "MIXED-LANGUAGE accuracy java-only=%.4f (%.0f s) java+python=%.4f (%.0f s)"
                  + " py-0 tasks=%s of %d",
              javaOnly,
              javaSeconds,
              mixed,
              (System.nanoTime() - started) / 1e9,
              pyTasks,
              PASSES * Jobs.number(end.json(), "datasetTasks"));
      System.out.println(report);
      Files.writeString(dir.resolve("report.txt"), report);
      assertThat(javaOnly).as("java-only accuracy").isGreaterThan(0.8);
      assertThat(mixed)
          .as("java+python accuracy vs java-only; " + report)
          .isCloseTo(javaOnly, within(0.01));
    } finally {
      PythonProcesses.kill(py);
      PythonProcesses.kill(wrong);
    }
  }

  /**
   * The job: MLP, SGD, 2 passes, tasks of about 1000 records; {@code javaTrainers} via the master.
   */
  private ClusterSpec spec(String job, int javaTrainers, String train, String test) {
    return Jobs.spec(dir.resolve(job))
        .job(job)
        .masters(1)
        .pservers(2)
        .trainers(javaTrainers)
        .trainersThroughMaster(true)
        .property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
        .property(Role.MASTER, "paramserver.master.task-records", "1000")
        // the first task waits for both trainers: the Python one starts seconds after the Java one
        .property(Role.MASTER, "paramserver.master.min-trainers", "2")
        // the console looks at the trainers often enough to see the Python trainer's progress
        .property(Role.MASTER, "paramserver.master.console.sample-interval", "250ms")
        .property(Role.TRAINER, "paramserver.trainer.train-data", train)
        .property(Role.TRAINER, "paramserver.trainer.test-data", test)
        .property(Role.TRAINER, "paramserver.trainer.model", "mlp")
        .property(Role.TRAINER, "paramserver.trainer.hidden", HIDDEN)
        .property(Role.TRAINER, "paramserver.trainer.optimizer", "sgd")
        .property(Role.TRAINER, "paramserver.trainer.learning-rate", LEARNING_RATE)
        .property(Role.TRAINER, "paramserver.trainer.batch-size", BATCH)
        .property(Role.TRAINER, "paramserver.trainer.exit-when-done", "false")
        .build();
  }

  static String[] trainerArgs(String master, String id, String hidden, String train, String test) {
    List<String> a = new ArrayList<>();
    a.add(PythonProcesses.TRAIN_MLP.toString());
    a.addAll(
        List.of(
            "--master",
            master,
            "--trainer-id",
            id,
            "--data",
            train,
            "--test",
            test,
            "--hidden",
            hidden,
            "--optimizer",
            "sgd",
            "--lr",
            LEARNING_RATE,
            "--batch-size",
            BATCH,
            "--mode",
            "async"));
    return a.toArray(String[]::new);
  }

  /** The job finished (or failed) with its last pass evaluated; asserts FINISHED. */
  static JobStatusView awaitEvaluatedEnd(LocalCluster cluster) {
    JobStatusView end =
        cluster.awaitJob(
            s ->
                s.isFailed()
                    || s.isFinished()
                        && s.passes().size() == PASSES
                        && s.passes().get(PASSES - 1).evalReports() >= 1,
            Duration.ofMinutes(4));
    assertThat(end.state()).as("job state; failure: %s", end.failureReason()).isEqualTo("FINISHED");
    return end;
  }

  private static String tail(Path log) {
    return PythonProcesses.tail(log, 40);
  }
}
