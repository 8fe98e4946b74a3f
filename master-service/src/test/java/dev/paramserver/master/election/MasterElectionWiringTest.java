package dev.paramserver.master.election;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.master.MasterContexts;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/** Two master contexts against a real etcd: one leads and serves, the other stands by. */
class MasterElectionWiringTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private final MasterContexts masters = new MasterContexts();

  private static JsonNode json(String body) throws java.io.IOException {
    return new ObjectMapper().readTree(body);
  }

  @AfterEach
  void close() {
    masters.close();
  }

  @Test
  void leaderPublishesItsGrpcAddress_standbyIsNotReady_andTakesOverWhenTheLeaderStops()
      throws Exception {
    String job = etcd.uniqueJob();
    ConfigurableApplicationContext first = masters.start(etcd.endpoint(), job);
    MasterElection firstElection = MasterContexts.election(first);
    Poll.until(Duration.ofSeconds(15), firstElection::isLeader, "the first master to lead");

    try (EtcdCoordinator c = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      String addr =
          c.kv().get(c.keys().masterAddr()).map(KeyValueStore.KeyValue::valueAsString).orElse("");
      assertThat(addr).isEqualTo(firstElection.identity()).startsWith("127.0.0.1:");
      assertThat(addr).doesNotEndWith(":0");
      // the published address is the real gRPC server: a call to it is answered by the leader
      ManagedChannel ch = Channels.forAddress(addr);
      try {
        assertThat(
                MasterGrpc.newBlockingStub(ch)
                    .withDeadlineAfter(5, TimeUnit.SECONDS)
                    .getStatus(GetStatusRequest.getDefaultInstance())
                    .getState())
            .isEqualTo(JobState.WAITING_FOR_DATASET);
      } finally {
        Channels.close(ch);
      }

      ConfigurableApplicationContext second = masters.start(etcd.endpoint(), job);
      MasterElection secondElection = MasterContexts.election(second);
      Poll.until(
          Duration.ofSeconds(10),
          () -> secondElection.state() == MasterElection.State.CAMPAIGNING,
          "the second master to campaign");
      assertThat(masters.get(first, "/actuator/health/readiness", false).statusCode())
          .isEqualTo(200);
      assertThat(masters.get(second, "/actuator/health/readiness", false).statusCode())
          .isEqualTo(503);
      assertThat(masters.get(second, "/actuator/health/liveness", false).statusCode())
          .isEqualTo(200);
      JsonNode leaderStatus = json(masters.get(first, "/admin/status", true).body());
      assertThat(leaderStatus.path("role").asString()).isEqualTo("master");
      assertThat(leaderStatus.path("state").asString()).isEqualTo("LEADER");
      assertThat(leaderStatus.path("identity").asString()).isEqualTo(firstElection.identity());
      assertThat(leaderStatus.path("leader").asBoolean()).isTrue();
      assertThat(leaderStatus.path("job").path("state").asString())
          .isEqualTo("WAITING_FOR_DATASET");
      assertThat(leaderStatus.path("job").path("pass").asInt(-1)).isZero();
      assertThat(leaderStatus.path("job").path("totalPasses").asInt()).isEqualTo(1);
      JsonNode standbyStatus = json(masters.get(second, "/admin/status", true).body());
      assertThat(standbyStatus.path("state").asString()).isEqualTo("STANDBY");
      assertThat(standbyStatus.path("leader").asBoolean()).isFalse();
      assertThat(standbyStatus.path("leaderAddress").asString())
          .isEqualTo(firstElection.identity());
      assertThat(standbyStatus.has("job")).isFalse();
      assertThat(masters.get(second, "/admin/status", false).statusCode()).isEqualTo(401);
      assertThat(masters.get(first, "/actuator/prometheus", false).body())
          .containsPattern("(?m)^paramserver_master_leader\\{[^}]*} 1\\.0$")
          .contains("paramserver_master_tasks{");
      assertThat(masters.get(second, "/actuator/prometheus", false).body())
          .containsPattern("(?m)^paramserver_master_leader\\{[^}]*} 0\\.0$");

      ManagedChannel standby = Channels.forAddress(secondElection.identity());
      try {
        Throwable t =
            org.assertj.core.api.Assertions.catchThrowable(
                () ->
                    MasterGrpc.newBlockingStub(standby)
                        .withDeadlineAfter(5, TimeUnit.SECONDS)
                        .getStatus(GetStatusRequest.getDefaultInstance()));
        assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.NOT_LEADER);
        assertThat(t).hasMessageContaining(firstElection.identity());
      } finally {
        Channels.close(standby);
      }

      first.close(); // graceful: resigns and revokes its lease
      Poll.until(Duration.ofSeconds(10), secondElection::isLeader, "the standby to take over");
      Poll.until(
          Duration.ofSeconds(5),
          () ->
              c.kv()
                  .get(c.keys().masterAddr())
                  .map(KeyValueStore.KeyValue::valueAsString)
                  .orElse("")
                  .equals(secondElection.identity()),
          "master/addr to name the new leader");
      assertThat(masters.get(second, "/actuator/health/readiness", false).statusCode())
          .isEqualTo(200);
    }
  }
}
