package dev.paramserver.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.service.EtcdOptOut;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.trainer.coordination.MasterTrainerCoordination;
import dev.paramserver.trainer.coordination.TrainerCoordination;
import dev.paramserver.trainer.testing.FakeCoordination;
import dev.paramserver.trainer.testing.TestData;
import dev.paramserver.trainer.training.TrainerState;
import dev.paramserver.trainer.training.TrainingProgress;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A trainer in master mode, given no etcd settings at all: no etcd coordinator or health indicator
 * exists; it joins the (fake) master's Coordination service with its model and the model's
 * description, attends with heartbeats, and its readiness follows the master, not etcd.
 */
@Timeout(120)
@SpringBootTest(
    classes = TrainerApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "paramserver.admin.exit-jvm-on-shutdown=false",
      "paramserver.trainer.id=t-master-mode",
      "paramserver.trainer.exit-when-done=false",
      "paramserver.trainer.mode=sync",
      "paramserver.trainer.coordination.mode=master",
      "management.endpoint.health.show-components=always"
    })
class TrainerMasterModeWiringTest {
  static FakeCoordination master;
  static Path data;

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry registry) throws Exception {
    master = new FakeCoordination(true);
    master.map = ClusterMap.newBuilder().setRevision(1).setPserversDesired(2).build();
    data = Files.createTempDirectory("trainer-master-mode");
    TestData.write(data.resolve("train.recordio"), 20, 10);
    registry.add("paramserver.trainer.coordination.masters", master::address);
    registry.add("paramserver.trainer.train-data", () -> data.resolve("*.recordio").toString());
  }

  @AfterAll
  static void stopMaster() {
    master.close();
  }

  @LocalServerPort int port;
  @Autowired ApplicationContext context;
  @Autowired TrainingProgress progress;

  @Test
  void masterMode_hasNoEtcd_joinsWithItsModel_andIsReadyWhileAttending() throws Exception {
    assertThat(context.getBeanNamesForType(Coordinator.class)).isEmpty();
    assertThat(context.getBeanNamesForType(EtcdOptOut.class)).hasSize(1);
    assertThat(context.containsBean("etcdHealthIndicator")).isFalse();
    assertThat(context.getBean(TrainerCoordination.class))
        .isInstanceOf(MasterTrainerCoordination.class);

    Poll.until(
        Duration.ofSeconds(30),
        () -> progress.state() == TrainerState.WAITING_FOR_PSERVERS && master.heartbeats.get() > 1,
        "trainer joined, attending and waiting for the pservers");
    JoinRequest join = master.joins.peek();
    assertThat(join.getTrainerId()).isEqualTo("t-master-mode");
    assertThat(join.getMode()).isEqualTo(TrainingMode.SYNC);
    assertThat(join.getParametersList()).extracting(p -> p.getName()).isNotEmpty();
    assertThat(join.getEndpoint()).isEqualTo("127.0.0.1:" + port);
    assertThat(join.getSession()).isNotBlank();
    assertThat(join.getModelDescription().getModel())
        .as("the model's description, for the master to record as model/description")
        .isNotBlank();
    assertThat(join.getModelDescription().getConfigMap()).containsKey("features");
    assertThat(join.getModelDescription().getParametersList()).as("no parameters").isEmpty();

    String readiness = get("/actuator/health/readiness");
    assertThat(readiness).contains("\"status\":\"UP\"").contains("\"master\"");
    String health = get("/actuator/health");
    assertThat(health).doesNotContain("\"etcd\"");
  }

  private String get(String path) {
    try {
      HttpResponse<String> r =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                  HttpResponse.BodyHandlers.ofString());
      return r.body();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
