package dev.paramserver.master.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.master.placement.ScalingPhase;
import dev.paramserver.master.placement.ScalingStatus;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.testsupport.JsonSchemaCheck;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The {@code scaling} of {@code /admin/job} from a placement coordinator's {@link ScalingStatus}:
 * the move under way, the committed and rolled-back moves with their bytes, copy, stall and
 * duration, as the master writes them and the published schema accepts.
 */
class ScalingSampleTest {

  private static JobView.Move move(String id, long epoch, int from, int to) {
    return new JobView.Move(id, epoch, from, to, 128, 2, null, null, null, null, null, null, null);
  }

  private static JobView.Move committed(String id, long epoch, int from, int to) {
    return new JobView.Move(
        id, epoch, from, to, 128, 2, "committed", 1_048_576L, 12L, 4096L, 80L, 6L, 95L);
  }

  private static JobView.Move rolledBack(String id, long epoch, int from, int to, String why) {
    return new JobView.Move(
        id, epoch, from, to, 128, 2, "rolled back: " + why, null, null, null, null, null, null);
  }

  private static ScalingStatus status(
      Long epoch,
      Integer pservers,
      Integer desired,
      String error,
      ScalingPhase phase,
      JobView.Move move,
      String lastError,
      List<JobView.Move> moves) {
    return new ScalingStatus(
        epoch, pservers, desired, error, phase, phase.describe(null), move, lastError, moves);
  }

  /** A grow from 2 to 3 pservers: one move committed, one rolled back, one under way. */
  static ScalingStatus growing() {
    return status(
        2L,
        2,
        3,
        null,
        ScalingPhase.MOVING,
        move("m-3", 3, 0, 2),
        "pserver 2 did not answer",
        List.of(committed("m-1", 2, 0, 2), rolledBack("m-2", 3, 1, 2, "pserver 2 did not answer")));
  }

  @Test
  void aCommittedMove_aRolledBackOne_andTheMoveUnderWay_areInTheView() throws Exception {
    JobView.Scaling s = ScalingSample.of(growing(), null);
    assertThat(s.epoch()).isEqualTo(2);
    assertThat(s.pservers()).isEqualTo(2);
    assertThat(s.desired()).isEqualTo(3);
    assertThat(s.phase()).isEqualTo("moving");
    assertThat(s.lastError()).isEqualTo("pserver 2 did not answer");
    assertThat(s.move())
        .isEqualTo(
            new JobView.Move("m-3", 3, 0, 2, 128, 2, null, null, null, null, null, null, null));
    assertThat(s.moves())
        .containsExactly(
            new JobView.Move(
                "m-1", 2, 0, 2, 128, 2, "committed", 1_048_576L, 12L, 4096L, 80L, 6L, 95L),
            new JobView.Move(
                "m-2",
                3,
                1,
                2,
                128,
                2,
                "rolled back: pserver 2 did not answer",
                null,
                null,
                null,
                null,
                null,
                null));

    // as the master writes /admin/job: the fields are there, and the schema accepts them
    ConsoleModel model = new ConsoleModel(10, new JobEvents(10));
    model.update(
        1_000_000,
        ConsoleViewGoldenTest.job(JobState.RUNNING, 0, 2, 200),
        List.of(ConsoleViewGoldenTest.pserver(0, 11, 100, "SERVING")),
        List.of(),
        s);
    JsonNode json =
        ConsoleViewGoldenTest.CLIENT_JSON.readTree(
            ConsoleViewGoldenTest.SPRING_JSON.writeValueAsString(model.view()));
    JsonNode scaling = json.path("scaling");
    assertThat(scaling.path("epoch").asLong()).isEqualTo(2);
    assertThat(scaling.path("pservers").asInt()).isEqualTo(2);
    assertThat(scaling.path("desired").asInt()).isEqualTo(3);
    assertThat(scaling.path("phase").asString()).isEqualTo("moving");
    assertThat(scaling.path("move").path("id").asString()).isEqualTo("m-3");
    assertThat(scaling.path("move").path("from").asInt()).isZero();
    assertThat(scaling.path("move").path("to").asInt()).isEqualTo(2);
    assertThat(scaling.path("move").path("slots").asInt()).isEqualTo(128);
    assertThat(scaling.path("move").path("result").isNull()).isTrue();
    JsonNode done = scaling.path("moves").get(0);
    assertThat(done.path("result").asString()).isEqualTo("committed");
    assertThat(done.path("bytes").asLong()).isEqualTo(1_048_576L);
    assertThat(done.path("copyMs").asLong()).isEqualTo(80);
    assertThat(done.path("stallMs").asLong()).isEqualTo(6);
    assertThat(done.path("durationMs").asLong()).isEqualTo(95);
    assertThat(scaling.path("moves").get(1).path("result").asString()).startsWith("rolled back");
    assertThat(scaling.path("moves").get(1).path("stallMs").isNull()).isTrue();
    assertThat(JsonSchemaCheck.of(JobViewSchema.published()).errors(json))
        .as(json.toString())
        .isEmpty();
    // and psctl's records read it back
    assertThat(ConsoleViewGoldenTest.CLIENT_JSON.treeToValue(json, JobView.class).scaling().moves())
        .hasSize(2);
  }

  @Test
  void aJobNeverScaled_isEpochZeroIdle_withoutAPlacementMap() throws Exception {
    JobView.Scaling s =
        ScalingSample.of(status(0L, null, 2, null, ScalingPhase.IDLE, null, null, List.of()), null);
    assertThat(s).isEqualTo(new JobView.Scaling(0, null, 2, "idle", null, null, List.of()));
    JsonNode json = ConsoleViewGoldenTest.CLIENT_JSON.valueToTree(s);
    assertThat(json.has("pservers")).isTrue();
    assertThat(json.path("pservers").isNull()).isTrue();
    assertThat(json.path("move").isNull()).isTrue();
  }

  @Test
  void onlyTheLastMovesAreKept() {
    List<JobView.Move> many = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      many.add(committed("m-" + i, i + 1, 0, 1));
    }
    ScalingStatus v = status(2L, 2, 3, null, ScalingPhase.MOVING, null, null, many);
    List<JobView.Move> moves = ScalingSample.of(v, null).moves();
    assertThat(moves).hasSize(ScalingSample.MOVES);
    assertThat(moves.get(0).id()).isEqualTo("m-10");
    assertThat(moves.get(moves.size() - 1).id()).isEqualTo("m-29");
  }

  @Test
  void etcdUnreadable_keepsThePlacementLastSeen_andSaysWhy() {
    JobView.Scaling before = ScalingSample.of(growing(), null);
    ScalingStatus v =
        status(
            null,
            null,
            null,
            "etcd: deadline exceeded",
            ScalingPhase.IDLE,
            null,
            null,
            List.of(committed("m-1", 2, 0, 2)));
    JobView.Scaling s = ScalingSample.of(v, before);
    assertThat(s.epoch()).isEqualTo(2);
    assertThat(s.pservers()).isEqualTo(2);
    assertThat(s.desired()).isEqualTo(3);
    assertThat(s.lastError()).isEqualTo("etcd: deadline exceeded");
    assertThat(s.moves()).hasSize(1);
  }

  @Test
  void theScalingEndpointsJson_keepsItsKeys_andLeavesEpochOutWhenEtcdIsUnreadable()
      throws Exception {
    JsonNode json =
        ConsoleViewGoldenTest.CLIENT_JSON.readTree(
            ConsoleViewGoldenTest.SPRING_JSON.writeValueAsString(growing()));
    assertThat(keys(json))
        .containsExactly("epoch", "pservers", "desired", "phase", "move", "lastError", "moves");
    assertThat(json.path("phase").asString()).isEqualTo("moving");
    assertThat(json.path("moves").get(0).path("stallMs").asLong()).isEqualTo(6);
    ScalingStatus unreadable =
        status(null, null, null, "etcd: down", ScalingPhase.IDLE, null, null, List.of());
    JsonNode error =
        ConsoleViewGoldenTest.CLIENT_JSON.readTree(
            ConsoleViewGoldenTest.SPRING_JSON.writeValueAsString(unreadable));
    assertThat(keys(error))
        .containsExactly("pservers", "desired", "error", "phase", "move", "lastError", "moves");
  }

  private static List<String> keys(JsonNode json) {
    List<String> keys = new ArrayList<>();
    json.propertyNames().forEach(keys::add);
    return keys;
  }
}
