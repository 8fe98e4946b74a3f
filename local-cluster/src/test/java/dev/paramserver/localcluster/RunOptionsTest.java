package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RunOptionsTest {

  @Test
  void parse_withOnlyTrain_appliesDefaults() {
    RunOptions o = RunOptions.parse("--train", "data/train-*.recordio");

    assertThat(o.model).isEqualTo("softmax");
    assertThat(o.optimizer).isEqualTo("sgd");
    assertThat(o.lr).isEqualTo("0.1");
    assertThat(o.batchSize).isEqualTo(64);
    assertThat(o.passes).isEqualTo(3);
    assertThat(o.pservers).isEqualTo(2);
    assertThat(o.trainers).isEqualTo(2);
    assertThat(o.masters).isEqualTo(1);
    assertThat(o.job).isEqualTo("local");
    assertThat(o.timeout).isEqualTo(Duration.ofMinutes(15));
    assertThat(o.sync).isFalse();
    assertThat(o.runDir.toString()).matches("runs/\\d{8}-\\d{6}");
    assertThat(o.testGlob()).isEqualTo("data/train-*.recordio");
  }

  @Test
  void parse_acceptsSpaceAndEqualsForms() {
    RunOptions o =
        RunOptions.parse(
            "--train=a*.rio",
            "--test",
            "b*.rio",
            "--lr=0.05",
            "--batch-size",
            "128",
            "--passes=5",
            "--pservers",
            "3",
            "--trainers=4",
            "--masters",
            "2",
            "--run-dir",
            "/tmp/x",
            "--job=j1",
            "--timeout",
            "90s",
            "--hidden",
            "128,64",
            "--sync",
            "--format=libsvm",
            "--model",
            "mlp",
            "--optimizer=adam");

    assertThat(o.trainGlob()).isEqualTo("a*.rio");
    assertThat(o.testGlob()).isEqualTo("b*.rio");
    assertThat(o.lr).isEqualTo("0.05");
    assertThat(o.batchSize).isEqualTo(128);
    assertThat(o.passes).isEqualTo(5);
    assertThat(o.pservers).isEqualTo(3);
    assertThat(o.trainers).isEqualTo(4);
    assertThat(o.masters).isEqualTo(2);
    assertThat(o.runDir).isEqualTo(Path.of("/tmp/x"));
    assertThat(o.job).isEqualTo("j1");
    assertThat(o.timeout).isEqualTo(Duration.ofSeconds(90));
    assertThat(o.hidden).isEqualTo("128,64");
    assertThat(o.sync).isTrue();
    assertThat(o.format).isEqualTo("libsvm");
    assertThat(o.model).isEqualTo("mlp");
    assertThat(o.optimizer).isEqualTo("adam");
  }

  @Test
  void parse_demoData_derivesTrainAndTestGlobs() {
    RunOptions o = RunOptions.parse("--demo-data", "/d");

    assertThat(o.trainGlob()).isEqualTo("/d/train-*.recordio");
    assertThat(o.testGlob()).isEqualTo("/d/test-*.recordio");
  }

  @Test
  void parse_set_collectsRolePropertiesInOrder() {
    RunOptions o =
        RunOptions.parse(
            "--train",
            "x",
            "--set",
            "pserver.paramserver.pserver.checkpoint-interval=10s",
            "--set=trainer.a.b=c=d");

    assertThat(o.extras)
        .containsExactly(
            new RunOptions.Extra(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "10s"),
            new RunOptions.Extra(Role.TRAINER, "a.b", "c=d"));
  }

  @Test
  void parse_acceptsNoTrainers_forTrainersOfYourOwn() {
    RunOptions o = RunOptions.parse("--train", "x", "--trainers", "0");
    assertThat(o.trainers).isZero();
    assertThat(RunLocal.spec(o, Map.of()).count(Role.TRAINER)).isZero();
  }

  @Test
  void parse_serving_startsServingReplicas_noneByDefault_andTakesTheirProperties() {
    assertThat(RunLocal.spec(RunOptions.parse("--train", "x"), Map.of()).count(Role.SERVING))
        .isZero();
    RunOptions o =
        RunOptions.parse(
            "--train", "x", "--serving", "2", "--set", "serving.paramserver.serving.max-ids=50");
    assertThat(o.serving).isEqualTo(2);
    ClusterSpec spec = RunLocal.spec(o, Map.of());
    assertThat(spec.count(Role.SERVING)).isEqualTo(2);
    assertThat(spec.extraProperties(Role.SERVING))
        .containsEntry("paramserver.serving.max-ids", "50");
    assertThatThrownBy(() -> RunOptions.parse("--train", "x", "--serving", "-1"))
        .isInstanceOf(RunOptions.UsageException.class);
  }

  @Test
  void parse_trainingNice_setsTrainersAndPserversPriority_0To19_defaultByServing() {
    ClusterSpec plain = RunLocal.spec(RunOptions.parse("--train", "x"), Map.of());
    assertThat(plain.niceness(Role.TRAINER)).isZero();
    ClusterSpec serving =
        RunLocal.spec(RunOptions.parse("--train", "x", "--serving", "1"), Map.of());
    assertThat(serving.niceness(Role.TRAINER))
        .isEqualTo(ClusterSpec.TRAINING_NICENESS_BESIDE_SERVING);
    assertThat(serving.niceness(Role.PSERVER))
        .isEqualTo(ClusterSpec.TRAINING_NICENESS_BESIDE_SERVING);
    assertThat(serving.niceness(Role.SERVING)).isZero();
    assertThat(serving.niceness(Role.MASTER)).isZero();
    ClusterSpec set =
        RunLocal.spec(
            RunOptions.parse("--train", "x", "--serving", "1", "--training-nice", "0"), Map.of());
    assertThat(set.niceness(Role.PSERVER)).isZero();
    assertThat(
            RunLocal.spec(RunOptions.parse("--train", "x", "--training-nice", "19"), Map.of())
                .niceness(Role.TRAINER))
        .isEqualTo(19);
    assertThatThrownBy(() -> RunOptions.parse("--train", "x", "--training-nice", "20"))
        .isInstanceOf(RunOptions.UsageException.class);
    assertThatThrownBy(() -> RunOptions.parse("--train", "x", "--training-nice", "-1"))
        .isInstanceOf(RunOptions.UsageException.class);
  }

  @Test
  void duration_acceptsSecondsMinutesHoursMillisAndIso() {
    assertThat(RunOptionConverters.duration("900")).isEqualTo(Duration.ofSeconds(900));
    assertThat(RunOptionConverters.duration("15m")).isEqualTo(Duration.ofMinutes(15));
    assertThat(RunOptionConverters.duration("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(RunOptionConverters.duration("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(RunOptionConverters.duration("1.5s")).isEqualTo(Duration.ofMillis(1500));
    assertThat(RunOptionConverters.duration("PT2M")).isEqualTo(Duration.ofMinutes(2));
  }

  @Test
  void parse_rejectsBadInputWithClearMessages() {
    Map<String[], String> cases =
        pairs(
            new String[] {},
            "no training data",
            new String[] {"--train", "x", "--pservers", "0"},
            "option '--pservers': must be at least 1, got 0",
            new String[] {"--train", "x", "--trainers", "-1"},
            "option '--trainers': must be 0 or more, got -1",
            new String[] {"--train", "x", "--lr", "-1"},
            "option '--lr': must be a positive number",
            new String[] {"--train", "x", "--bogus", "1"},
            "Unknown options: '--bogus'",
            new String[] {"--train"},
            "Missing required parameter for option '--train'",
            new String[] {"--train", "x", "--set", "worker.a=b"},
            "unknown role 'worker'",
            new String[] {"--train", "x", "--timeout", "soon"},
            "bad duration 'soon'",
            new String[] {"--train", "x", "--hidden", "128,0"},
            "option '--hidden': expects positive layer sizes",
            new String[] {"--train", "x", "--format", "json"},
            "--format must be recordio, libsvm or csv",
            new String[] {"--train", "x", "--demo-data", "d"},
            "either --train or --demo-data",
            new String[] {"--train", "x", "--optimizer", "lion"},
            "option '--optimizer': 'lion' is not one of sgd, momentum, nesterov, adam, adamw,"
                + " adagrad, rmsprop, adadelta",
            new String[] {"--train", "x", "--model", "cnn"},
            "option '--model': 'cnn' is not one of softmax, mlp, sparse-lr",
            new String[] {"--train", "x", "--lr-schedule", "cosine"},
            "option '--lr-schedule': 'cosine' is not one of constant, step, exponential,"
                + " warmup-cosine, warmup-linear",
            new String[] {"--train", "x", "--mode", "semi"},
            "option '--mode': 'semi' is not one of async, sync, bounded-staleness",
            new String[] {"--train", "x", "--beta1", "1"},
            "option '--beta1': must be in [0, 1), got 1",
            new String[] {"--train", "x", "--sync", "--mode", "bounded-staleness"},
            "--sync contradicts --mode bounded-staleness");
    cases.forEach(
        (args, message) ->
            assertThatThrownBy(() -> RunOptions.parse(args))
                .as(String.join(" ", args))
                .isInstanceOf(RunOptions.UsageException.class)
                .hasMessageContaining(message));
  }

  @Test
  void parse_standardizeWithoutCsv_isAUsageError() {
    assertThatThrownBy(() -> RunOptions.parse("--train", "x", "--standardize"))
        .isInstanceOf(RunOptions.UsageException.class)
        .hasMessageContaining("--standardize needs --format csv");
    assertThat(RunOptions.parse("--train", "x.csv", "--format", "csv", "--standardize").isCsv())
        .isTrue();
  }

  @Test
  void parse_help_needsNoData() {
    assertThat(RunOptions.parse("--help").help).isTrue();
  }

  private static Map<String[], String> pairs(Object... argsAndMessages) {
    Map<String[], String> out = new java.util.LinkedHashMap<>();
    for (int i = 0; i < argsAndMessages.length; i += 2) {
      out.put((String[]) argsAndMessages[i], (String) argsAndMessages[i + 1]);
    }
    return out;
  }
}
