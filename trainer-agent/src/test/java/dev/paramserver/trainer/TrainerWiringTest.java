package dev.paramserver.trainer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.trainer.admin.ScrapeWatch;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.micrometer.metrics.test.autoconfigure.AutoConfigureMetrics;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The trainer's Spring wiring against a real etcd with no pservers yet: it registers itself under
 * its lease, waits for the pservers it was told to expect, and says so on the admin endpoint.
 */
// metrics export is on, as in a real trainer (Spring Boot's tests turn it off by default)
@AutoConfigureMetrics
@SpringBootTest(
    classes = TrainerApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "paramserver.admin.token=tok",
      "paramserver.admin.exit-jvm-on-shutdown=false",
      "paramserver.trainer.id=t-wiring",
      "paramserver.trainer.exit-when-done=false"
    })
class TrainerWiringTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  static Path data;

  @DynamicPropertySource
  static void props(DynamicPropertyRegistry registry) throws Exception {
    data = Files.createTempDirectory("trainer-wiring");
    try (RecordWriter w =
        RecordWriter.create(data.resolve("train.recordio"), Compressor.NONE, 10)) {
      for (int i = 0; i < 20; i++) {
        w.write(Example.newBuilder().addDense(i).addDense(1).setLabel(i % 3).build().toByteArray());
      }
    }
    registry.add("paramserver.etcd.endpoints", etcd::endpoint);
    registry.add("paramserver.job", etcd::uniqueJob);
    registry.add("paramserver.trainer.train-data", () -> data.resolve("*.recordio").toString());
  }

  @LocalServerPort int port;
  @Autowired Coordinator coordinator;
  @Autowired ScrapeWatch scrapes;

  @Test
  void trainer_registersUnderItsLease_andWaitsForPservers() throws Exception {
    Poll.until(
        Duration.ofSeconds(20),
        Duration.ofMillis(100),
        () -> coordinator.kv().get(coordinator.keys().trainer("t-wiring")).isPresent(),
        "trainers/t-wiring registered in etcd");
    assertThat(coordinator.kv().get(coordinator.keys().trainer("t-wiring")).get().valueAsString())
        .isEqualTo("127.0.0.1:" + port);

    HttpClient http = HttpClient.newHttpClient();
    HttpRequest req =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/admin/status"))
            .header("Authorization", "Bearer tok")
            .build();
    Poll.until(
        Duration.ofSeconds(20),
        Duration.ofMillis(100),
        () -> status(http, req).path("state").asString().equals("WAITING_FOR_PSERVERS"),
        "trainer waiting for pservers");
    JsonNode status = status(http, req);
    assertThat(status.path("role").asString()).isEqualTo("trainer");
    assertThat(status.path("identity").asString()).isEqualTo("t-wiring");
    assertThat(status.path("model").asString()).isEqualTo("softmax");

    HttpRequest noToken =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/admin/status")).build();
    assertThat(http.send(noToken, HttpResponse.BodyHandlers.ofString()).statusCode())
        .isEqualTo(401);
  }

  @Test
  void scrapeWatch_seesPrometheusScrapes_andNothingElse() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    long before = System.nanoTime();
    HttpRequest other =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/health")).build();
    assertThat(http.send(other, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    assertThat(scrapes.awaitScrapeAfter(before, Duration.ofMillis(200))).isFalse();

    HttpRequest scrape =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
            .build();
    HttpResponse<String> metrics = http.send(scrape, HttpResponse.BodyHandlers.ofString());
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body()).contains("jvm_threads_live_threads");
    assertThat(scrapes.awaitScrapeAfter(before, Duration.ofSeconds(5))).isTrue();
    assertThat(scrapes.awaitScrapeAfter(System.nanoTime(), Duration.ofMillis(100))).isFalse();
  }

  private static JsonNode status(HttpClient http, HttpRequest req) {
    try {
      return new ObjectMapper()
          .readTree(http.send(req, HttpResponse.BodyHandlers.ofString()).body());
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
