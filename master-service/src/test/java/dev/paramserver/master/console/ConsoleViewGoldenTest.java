package dev.paramserver.master.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import dev.paramserver.testsupport.JsonSchemaCheck;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * The JSON of {@code GET /admin/job} (field names, nesting, null versus absent, 1.0 versus 1; not
 * the order of an object's fields, which was never fixed) as Spring's message converter writes the
 * console's view, for a job with a finished and evaluated pass, a hot pserver, a lost one, an
 * unreachable trainer and a straggler; and before the first sample. The admin API is a user-facing
 * contract: a change to these files is a change to the API (docs/console.md).
 */
class ConsoleViewGoldenTest {
  /**
   * The mapper Spring Boot's message converter writes with (Jackson 3, as Boot's auto-configuration
   * builds it; the master customises nothing).
   */
  static final JsonMapper SPRING_JSON = bootJsonMapper();

  /** A plain Jackson 3 mapper, as a client such as psctl reads and writes the answers. */
  static final ObjectMapper CLIENT_JSON = new ObjectMapper();

  private static JsonMapper bootJsonMapper() {
    JsonMapper[] mapper = new JsonMapper[1];
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
        .run(context -> mapper[0] = context.getBean(JsonMapper.class));
    return mapper[0];
  }

  static JobStatus job(JobState state, int pass, int done, long records) {
    JobStatus.Builder b =
        JobStatus.newBuilder()
            .setState(state)
            .setPass(pass)
            .setTotalPasses(3)
            .setMasterId("127.0.0.1:9091")
            .setAdminAddress("127.0.0.1:8081")
            .setDatasetTasks(10)
            .setDatasetRecords(1000)
            .setTasks(
                TaskCounts.newBuilder()
                    .setTodo(Math.max(0, 9 - done))
                    .setPending(done < 10 ? 1 : 0)
                    .setDone(done)
                    .build());
    for (int p = 0; p <= Math.min(pass, 2); p++) {
      PassStatus.Builder ps =
          PassStatus.newBuilder().setPass(p).setStartedMs(1_000_000 + p * 10_000L);
      if (p < pass) {
        ps.setRecords(1000).setDuplicates(3).setTimeouts(1);
        ps.setEndedMs(1_000_000 + (p + 1) * 10_000L);
        ps.setEvalReports(2).setEvalLoss(0.5).setEvalAccuracy(0.875).setEvalAuc(0.9375);
      } else {
        ps.setRecords(records);
      }
      b.addPasses(ps);
    }
    return b.build();
  }

  static PserverSample pserver(int index, long registration, long pushes, String state) {
    return new PserverSample(
        index,
        "127.0.0.1:" + (9100 + index),
        registration,
        "127.0.0.1:" + (8100 + index),
        state,
        "init-1",
        pushes * 2,
        4096L * (index + 1),
        index == 0 ? Map.of("emb", 12L) : Map.of(),
        pushes,
        pushes / 2,
        index == 0 ? 1.25 : null,
        index == 0 ? 1_000_500L : 0,
        "");
  }

  static TrainerSample trainer(String id, int pass, long task, long samples, Double loss) {
    return new TrainerSample(
        id, "127.0.0.1:82" + id.length(), "TRAINING", pass, task, pass, samples, 100, loss, "");
  }

  /** A job sampled four times: pass 0 ends and is evaluated, a pserver dies, a trainer hangs. */
  static ConsoleModel sampledModel() {
    JobEvents events = new JobEvents(50);
    events.add(1_000_000, "leader", "master 127.0.0.1:9091 leads the job");
    ConsoleModel model = new ConsoleModel(100, events);
    model.update(
        1_002_000,
        job(JobState.RUNNING, 0, 2, 200),
        List.of(
            pserver(0, 11, 100, "SERVING"),
            pserver(1, 12, 100, "SERVING"),
            pserver(2, 13, 100, "SERVING")),
        List.of(trainer("a", 0, 4, 200, 0.75), trainer("bb", 0, 5, 100, null)));
    model.update(
        1_003_000,
        job(JobState.RUNNING, 0, 5, 500),
        List.of(
            pserver(0, 11, 200, "SERVING"),
            PserverSample.unreachable(1, "127.0.0.1:9101", 12, "127.0.0.1:8101", "refused"),
            pserver(2, 13, 700, "SERVING")),
        List.of(
            trainer("a", 0, 6, 400, 0.5),
            trainer("bb", 0, 7, 150, 0.625),
            trainer("ccc", 0, -1, 0, null)));
    model.update(
        1_012_000,
        job(JobState.RUNNING, 1, 1, 100),
        List.of(pserver(0, 11, 300, "SERVING"), pserver(2, 13, 1200, "SERVING")),
        List.of(
            trainer("a", 1, 8, 1400, 0.25),
            TrainerSample.unreachable("bb", "127.0.0.1:822", "timed out"),
            trainer("ccc", 0, 9, 100, 0.5)));
    return model;
  }

  @Test
  void theViewOfASampledJob_isTheGoldenJson() throws IOException {
    assertGolden("admin-job-golden.json", sampledModel().view());
  }

  @Test
  void theViewBeforeTheFirstSample_isTheGoldenJson() throws IOException {
    JobEvents events = new JobEvents(5);
    events.add(1_000_000, "leader", "master 127.0.0.1:9091 leads the job");
    assertGolden("admin-job-golden-unsampled.json", new ConsoleModel(10, events).view());
  }

  @Test
  void theViewOfAFinishedJob_isTheGoldenJson() throws IOException {
    ConsoleModel model = sampledModel();
    JobStatus done = job(JobState.FINISHED, 3, 10, 1000);
    model.update(1_040_000, done, List.of(pserver(0, 11, 900, "SERVING")), List.of());
    assertGolden("admin-job-golden-finished.json", model.view());
  }

  /**
   * Compares the JSON, as parsed trees (a 12.0 is not a 12, a null is not an absent field), with
   * {@code console/<name>}; a missing or differing file: the actual JSON is written to {@code
   * target/golden/<name>} for review.
   */
  static void assertGolden(String name, Object view) throws IOException {
    String actual = SPRING_JSON.writerWithDefaultPrettyPrinter().writeValueAsString(view) + "\n";
    JsonNode expected;
    try (InputStream in = ConsoleViewGoldenTest.class.getResourceAsStream("/console/" + name)) {
      expected = in == null ? null : CLIENT_JSON.readTree(in);
    }
    JsonNode tree = CLIENT_JSON.readTree(actual);
    assertThat(CLIENT_JSON.readTree(CLIENT_JSON.writeValueAsString(view)))
        .as("%s as a plain mapper writes it", name)
        .isEqualTo(tree);
    if (!tree.equals(expected)) {
      Path out = Path.of("target", "golden", name);
      Files.createDirectories(out.getParent());
      Files.writeString(out, actual, StandardCharsets.UTF_8);
    }
    assertThat(tree).as("the JSON of %s (actual in target/golden/)", name).isEqualTo(expected);
    assertThat(JsonSchemaCheck.of(JobViewSchema.published()).errors(tree))
        .as("%s against the published schema", name)
        .isEmpty();
  }
}
