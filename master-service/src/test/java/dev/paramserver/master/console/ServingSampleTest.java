package dev.paramserver.master.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.etcd.ServingReplicaRecord;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.testsupport.JsonSchemaCheck;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The {@code serving} of {@code /admin/job} from the replicas' etcd records and the pservers of the
 * same sample: how many updates each replica is behind, unknown while it loads or a pserver does
 * not answer; as the master writes it and the published schema accepts.
 */
class ServingSampleTest {

  private static ServingReplicaRecord record(String address, String state, List<Long> seq) {
    return new ServingReplicaRecord(
        address, "127.0.0.1:8090", state, "FOLLOWING", seq.isEmpty() ? 0 : 9, seq, 40, 2);
  }

  @Test
  void behind_isThePserversStepsMinusTheSequencesServed_unknownWhileLoadingOrAPserverIsDown() {
    Map<String, ServingReplicaRecord> regs = new LinkedHashMap<>();
    regs.put("b", record("127.0.0.1:9095", "SERVING", List.of(100L, 50L)));
    regs.put("a", record("127.0.0.1:9094", "SERVING", List.of(90L, 60L)));
    regs.put("c", record("127.0.0.1:9096", "LOADING", List.of()));
    // steps: 100 and 56 (the fixture steps twice its pushes)
    List<PserverSample> both =
        List.of(
            ConsoleViewGoldenTest.pserver(0, 11, 50, "SERVING"),
            ConsoleViewGoldenTest.pserver(1, 12, 28, "SERVING"));

    List<JobView.Serving> out = ServingSample.of(regs, both);
    assertThat(out).extracting(JobView.Serving::id).containsExactly("a", "b", "c");
    // a: 100 - 90 + max(0, 56 - 60); b: 0 + 6 (a replica's sequence read after the pserver's step)
    assertThat(out).extracting(JobView.Serving::behind).containsExactly(10L, 6L, null);
    assertThat(out.get(0).lagMs()).isEqualTo(40);
    assertThat(out.get(0).sequences()).containsExactly(90L, 60L);

    List<PserverSample> oneDown =
        List.of(
            ConsoleViewGoldenTest.pserver(0, 11, 50, "SERVING"),
            PserverSample.unreachable(1, "127.0.0.1:9093", 12, "", "refused"));
    assertThat(ServingSample.of(regs, oneDown))
        .extracting(JobView.Serving::behind)
        .containsOnlyNulls();
  }

  @Test
  void theViewCarriesTheReplicas_andTheSchemaAcceptsThem() throws Exception {
    ConsoleModel model = new ConsoleModel(10, new JobEvents(10));
    model.update(
        1_000_000,
        ConsoleViewGoldenTest.job(JobState.RUNNING, 0, 2, 200),
        List.of(ConsoleViewGoldenTest.pserver(0, 11, 50, "SERVING")),
        List.of(),
        null,
        ServingSample.of(
            Map.of("r1", record("127.0.0.1:9094", "SERVING", List.of(97L))),
            List.of(ConsoleViewGoldenTest.pserver(0, 11, 50, "SERVING"))));
    JsonNode json =
        ConsoleViewGoldenTest.CLIENT_JSON.readTree(
            ConsoleViewGoldenTest.SPRING_JSON.writeValueAsString(model.view()));
    JsonNode r = json.path("serving").get(0);
    assertThat(r.path("address").asString()).isEqualTo("127.0.0.1:9094");
    assertThat(r.path("behind").asLong()).isEqualTo(3);
    assertThat(r.path("version").asLong()).isEqualTo(9);
    assertThat(JsonSchemaCheck.of(JobViewSchema.published()).errors(json))
        .as(json.toString())
        .isEmpty();
    // psctl's records read it back
    assertThat(ConsoleViewGoldenTest.CLIENT_JSON.treeToValue(json, JobView.class).serving())
        .hasSize(1);
  }
}
