package dev.paramserver.adminapi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.testsupport.JsonSchemaCheck;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The published schema of {@code GET /admin/job} is the one the records give, and it accepts what
 * the records write and nothing else (a field more or less, a null or a fraction where none may
 * be).
 */
class JobViewSchemaTest {
  private static final ObjectMapper JSON = AdminClient.json();

  /** A view with every kind of value: nulls, an empty map, an empty list, a list with a null. */
  static JobView sample() {
    return new JobView(
        1_764_570_000_000L,
        true,
        new JobView.Job(
            "RUNNING",
            "",
            "127.0.0.1:9091",
            "127.0.0.1:8081",
            1,
            3,
            new JobView.Tasks(4, 2, 6, 0),
            12,
            12_000,
            1_764_569_940_000L,
            60.0,
            0.5,
            null,
            1200.0,
            1300.0),
        List.of(
            new JobView.Pass(
                0, 1_764_569_940_000L, 1_764_569_970_000L, 12_000, 0, 1, 0.51, 0.4, 0.91, null),
            new JobView.Pass(1, 1_764_569_970_000L, null, 6000, 0, 0, null, null, null, null)),
        new JobView.Series(
            List.of(1.0, 2.0),
            List.of(1, 1),
            List.of(1100.0, 1200.0),
            List.of(1250.0, 1300.0),
            Arrays.asList(null, 0.3)),
        List.of(
            new JobView.Pserver(
                0,
                "127.0.0.1:9092",
                "127.0.0.1:8082",
                "SERVING",
                1234,
                1320,
                Map.of("emb", 12L),
                50.0,
                50.0,
                0.42,
                12.0,
                null,
                false,
                false,
                ""),
            new JobView.Pserver(
                1,
                "127.0.0.1:9093",
                "",
                "LOST",
                0,
                0,
                Map.of(),
                0,
                0,
                null,
                null,
                null,
                false,
                true,
                "not registered in etcd")),
        List.of(
            new JobView.Trainer(
                "trainer-0",
                "127.0.0.1:8084",
                "TRAINING",
                1,
                7L,
                9000,
                12L,
                1000.0,
                0.29,
                1_764_570_000_000L,
                0.0,
                0,
                false,
                ""),
            new JobView.Trainer(
                "trainer-1",
                "127.0.0.1:8085",
                "UNREACHABLE",
                -1,
                null,
                0,
                null,
                0,
                null,
                null,
                null,
                null,
                false,
                "refused")),
        List.of(new JobView.Event(1_764_569_940_000L, "leader", "master 127.0.0.1:9091 leads")),
        new JobView.Scaling(
            3,
            2,
            3,
            "moving",
            new JobView.Move("m-4", 4, 0, 2, 64, 1, null, null, null, null, null, null, null),
            "pserver 1 did not answer",
            List.of(
                new JobView.Move(
                    "m-2", 3, 0, 1, 128, 2, "committed", 1_048_576L, 12L, 4096L, 80L, 6L, 95L),
                new JobView.Move(
                    "m-3",
                    4,
                    1,
                    2,
                    64,
                    0,
                    "rolled back: pserver 1 did not answer",
                    null,
                    null,
                    null,
                    null,
                    null,
                    null))),
        null,
        List.of(
            new JobView.Serving(
                "4f0c",
                "127.0.0.1:9094",
                "127.0.0.1:8086",
                "SERVING",
                "FOLLOWING",
                57,
                List.of(1204L, 998L),
                3L,
                12,
                2),
            new JobView.Serving(
                "9a1e", "127.0.0.1:9095", "", "LOADING", "FOLLOWING", 0, List.of(), null, 0, 0)));
  }

  @Test
  void theCommittedSchemaIsTheOneTheRecordsGive() throws Exception {
    assertCommittedIsGenerated();
  }

  static void assertCommittedIsGenerated() throws Exception {
    String generated = JobViewSchema.generateText();
    String published;
    try (var in = JobViewSchema.class.getResourceAsStream(JobViewSchema.RESOURCE)) {
      published = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    if (!generated.equals(published)) {
      Path out = Path.of("target", "job-view.schema.json");
      Files.writeString(out, generated, StandardCharsets.UTF_8);
    }
    assertThat(published)
        .as(
            "the records changed: if that is meant (the admin API changes), cp"
                + " admin-api/target/job-view.schema.json"
                + " admin-api/src/main/resources%s and say so in docs/console.md",
            JobViewSchema.RESOURCE)
        .isEqualTo(generated);
  }

  @Test
  void whatTheRecordsWrite_isValid_andReadsBackTheSame() throws Exception {
    JsonSchemaCheck schema = JsonSchemaCheck.of(JobViewSchema.published());
    for (JobView v : List.of(sample(), JobView.unsampled(sample().events()))) {
      JsonNode json = JSON.valueToTree(v);
      assertThat(schema.errors(json)).as(json.toString()).isEmpty();
      JobView back = JSON.treeToValue(json, JobView.class);
      assertThat(back).isEqualTo(v);
      assertThat((JsonNode) JSON.valueToTree(back)).isEqualTo(json);
    }
  }

  @Test
  void beforeTheFirstSample_onlyLeaderAnEmptyJobAndTheEventsAreWritten() {
    JsonNode json = JSON.valueToTree(JobView.unsampled(List.of()));
    assertThat(json.toString()).isEqualTo("{\"leader\":true,\"job\":{},\"events\":[]}");
    assertThat(JobView.unsampled(List.of()).sampled()).isFalse();
  }

  @Test
  void aFieldMoreOrLess_aNullOrAFractionWhereNoneMayBe_isRejected() {
    JsonSchemaCheck schema = JsonSchemaCheck.of(JobViewSchema.published());
    ObjectNode missing = JSON.valueToTree(sample());
    ((ObjectNode) missing.path("pservers").get(0)).remove("hot");
    assertThat(schema.errors(missing)).singleElement().asString().contains("hot");

    ObjectNode extra = JSON.valueToTree(sample());
    ((ObjectNode) extra.path("job")).put("color", "red");
    // job is a Job or, before the first sample, {}: both alternatives say why they do not match
    assertThat(schema.errors(extra)).anyMatch(e -> e.contains("'color' is not defined"));

    ObjectNode nullState = JSON.valueToTree(sample());
    ((ObjectNode) nullState.path("trainers").get(0)).putNull("state");
    assertThat(schema.errors(nullState)).isNotEmpty();

    ObjectNode fraction = JSON.valueToTree(sample());
    ((ObjectNode) fraction.path("job").path("tasks")).put("todo", 1.5);
    assertThat(schema.errors(fraction)).isNotEmpty();

    ObjectNode nullRate = JSON.valueToTree(sample());
    ((ArrayNode) nullRate.path("series").path("recordsPerSecond")).setNull(0);
    assertThat(schema.errors(nullRate)).isNotEmpty();

    ObjectNode nullLoss = JSON.valueToTree(sample());
    ((ArrayNode) nullLoss.path("series").path("trainLoss")).setNull(1);
    assertThat(schema.errors(nullLoss)).isEmpty();

    ObjectNode noStall = JSON.valueToTree(sample());
    ((ObjectNode) noStall.path("scaling").path("moves").get(0)).remove("stallMs");
    assertThat(schema.errors(noStall)).singleElement().asString().contains("stallMs");

    ObjectNode noScaling = JSON.valueToTree(sample());
    noScaling.remove("scaling"); // a master that does not sample the placement: left out
    assertThat(schema.errors(noScaling)).isEmpty();

    ObjectNode noServing = JSON.valueToTree(sample());
    noServing.remove("serving"); // a master older than the serving replicas: left out
    assertThat(schema.errors(noServing)).isEmpty();

    ObjectNode fractionalVersion = JSON.valueToTree(sample());
    ((ObjectNode) fractionalVersion.path("serving").get(0)).put("version", 1.5);
    assertThat(schema.errors(fractionalVersion)).isNotEmpty();

    ObjectNode noEvents = JSON.valueToTree(sample());
    noEvents.remove("events");
    assertThat(schema.errors(noEvents)).isNotEmpty();
  }
}
