package dev.paramserver.trainer.training;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.trainer.TrainerApplication;
import dev.paramserver.trainer.testing.FakeMaster;
import dev.paramserver.trainer.testing.FakePserver;
import dev.paramserver.trainer.testing.InProcessChannels;
import dev.paramserver.trainer.testing.TestData;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The whole trainer as Spring wires it, against a fake master and two fake pservers over in-process
 * gRPC (real etcd): it registers, waits for the pservers, initialises them, trains every task,
 * evaluates, writes the model and finishes; metrics and status follow.
 */
@SpringBootTest(
    classes = {TrainerApplication.class, TrainingSessionTest.InProcess.class},
    properties = {
      "paramserver.admin.token=tok",
      "paramserver.admin.exit-jvm-on-shutdown=false",
      "paramserver.trainer.id=t-session",
      "paramserver.trainer.exit-when-done=false",
      "paramserver.trainer.batch-size=8",
      "paramserver.trainer.block-size=2",
      "paramserver.trainer.learning-rate=0.5",
      "paramserver.trainer.max-backoff=100ms",
      "server.port=0"
    })
@Timeout(90)
class TrainingSessionTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  static Path data;
  static FakeMaster master;
  static FakePserver ps0;
  static FakePserver ps1;

  @TestConfiguration(proxyBeanMethods = false)
  static class InProcess {
    @Bean
    ChannelFactory inProcessChannels() {
      return new InProcessChannels();
    }
  }

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry registry) throws Exception {
    data = Files.createTempDirectory("trainer-session");
    List<ChunkInfo> chunks = TestData.write(data.resolve("train.recordio"), 64, 16);
    TestData.write(data.resolve("test.recordio"), 16, 16);
    master = new FakeMaster();
    master.addTask(1, chunks.subList(0, 2));
    master.addTask(2, chunks.subList(2, 4));
    ps0 = new FakePserver(0.5f);
    ps1 = new FakePserver(0.5f);
    registry.add("paramserver.etcd.endpoints", etcd::endpoint);
    registry.add("paramserver.job", etcd::uniqueJob);
    registry.add("paramserver.trainer.train-data", () -> data.resolve("train.recordio").toString());
    registry.add("paramserver.trainer.test-data", () -> data.resolve("test.recordio").toString());
    registry.add("paramserver.trainer.model-output", () -> data.resolve("model.bin").toString());
  }

  @AfterAll
  static void stopFakes() throws Exception {
    master.close();
    ps0.close();
    ps1.close();
  }

  @Autowired Coordinator coordinator;
  @Autowired TrainingProgress progress;
  @Autowired MeterRegistry registry;

  @Test
  void session_trainsTheJobToTheEnd() {
    Poll.until(
        Duration.ofSeconds(20),
        () -> progress.state() == TrainerState.WAITING_FOR_PSERVERS,
        "trainer waiting for pservers");
    assertThat(coordinator.kv().get(coordinator.keys().trainer("t-session"))).isPresent();
    coordinator.kv().put(coordinator.keys().psDesired(), "2".getBytes(UTF_8));
    coordinator.kv().put(coordinator.keys().ps(0), ps0.address().getBytes(UTF_8));
    coordinator.kv().put(coordinator.keys().ps(1), ps1.address().getBytes(UTF_8));
    coordinator.kv().put(coordinator.keys().masterAddr(), master.address().getBytes(UTF_8));

    Poll.until(
        Duration.ofSeconds(60), () -> progress.state().isFinal(), "the trainer session to end");

    assertThat(progress.state()).isEqualTo(TrainerState.FINISHED);
    assertThat(ps0.initialised()).isTrue();
    assertThat(ps1.initialised()).isTrue();
    assertThat(master.finished).hasSize(2);
    assertThat(master.evaluations).isNotEmpty();
    assertThat(master.evaluations.peek().getAccuracy()).isGreaterThan(0.9);
    assertThat(Files.exists(data.resolve("model.bin"))).isTrue();
    assertThat(registry.get("paramserver.trainer.samples").functionCounter().count()).isEqualTo(64);
    assertThat(registry.get("paramserver.trainer.bytes.pushed").functionCounter().count())
        .isPositive();
    assertThat(
            registry
                .get("paramserver.trainer.tasks")
                .tag("outcome", "finished")
                .functionCounter()
                .count())
        .isEqualTo(2);
    // the registration ends with the session's lease, revoked as the session ends
    Poll.until(
        Duration.ofSeconds(20),
        () -> coordinator.kv().get(coordinator.keys().trainer("t-session")).isEmpty(),
        "trainers/t-session removed with the session's lease");
  }
}
