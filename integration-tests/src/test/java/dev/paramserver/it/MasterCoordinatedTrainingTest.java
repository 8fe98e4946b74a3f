package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.testsupport.Poll;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * Java trainers coordinated by the master (issue 30): real etcd, two masters, two pservers and two
 * trainers as processes, the trainers given the masters' addresses and no etcd settings. They train
 * softmax regression to the accuracy the etcd-mode {@link DistributedTrainingTest} reaches; the
 * master registers them in etcd ({@code trainers/<id>} with their HTTP address, what the pservers'
 * sync membership reads) and its console lists them.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class MasterCoordinatedTrainingTest {
  @TempDir Path dir;

  @Test
  void trainersWithoutEtcd_trainThroughTheMaster_andCountAsMembers() throws Exception {
    Path data = dir.resolve("data");
    DemoData.Result demo =
        DemoData.generate(
            data, DemoData.Options.builder().train(20000).test(4000).shards(2).build());
    // enough passes that both trainers are members for a while: the checks below look at them
    // while the job trains (with 2 passes the window was about 6 s, and a CI run missed it)
    int passes = 8;
    try (LocalCluster cluster =
        new LocalCluster(
            Jobs.spec(dir.resolve("run"))
                .job("coord-master")
                .masters(2)
                .pservers(2)
                .trainers(2)
                .trainersThroughMaster(true)
                .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
                .property(
                    Role.TRAINER, "paramserver.trainer.train-data", data + "/train-*.recordio")
                .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
                .property(Role.TRAINER, "paramserver.trainer.learning-rate", "0.1")
                .property(Role.TRAINER, "paramserver.trainer.exit-when-done", "false")
                .property(Role.TRAINER, "management.endpoint.health.show-components", "always")
                .build())) {
      cluster.start();

      // while training: both trainers registered in etcd by the master, and on its console
      try (EtcdCoordinator etcd =
          EtcdCoordinator.connect(EtcdSettings.of(cluster.etcdEndpoint(), "coord-master"))) {
        Poll.until(
            Duration.ofMinutes(2),
            () -> registeredTrainers(etcd).size() == 2,
            "trainers/<id> of both trainers in etcd");
        Map<String, String> registered = registeredTrainers(etcd);
        for (int i = 0; i < 2; i++) {
          assertThat(registered)
              .containsEntry(
                  "trainer-" + i, "127.0.0.1:" + cluster.process(Role.TRAINER, i).httpPort());
        }
      }
      Poll.until(
          Duration.ofMinutes(2),
          () -> consoleTrainers(cluster).equals(Set.of("trainer-0", "trainer-1")),
          "both trainers on the leader's console");

      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && !s.passes().isEmpty()
                          && s.passes().get(s.passes().size() - 1).evalReports() >= 1,
              Duration.ofMinutes(5));
      assertThat(end.state())
          .as("job state; failure: %s", end.failureReason())
          .isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, passes);
      JobStatusView.PassView last = end.passes().get(passes - 1);
      assertThat(last.evalAccuracy()).as("test accuracy after the last pass").isGreaterThan(0.90);
      assertThat(last.evalLoss()).isLessThan(0.5);

      // the trainers' health has the master, not etcd
      for (int i = 0; i < 2; i++) {
        JsonNode health =
            get(cluster.process(Role.TRAINER, i).httpPort(), "/actuator/health", null);
        assertThat(health.path("status").asString()).as("trainer %d health", i).isEqualTo("UP");
        assertThat(health.path("components").has("master")).as("trainer %d health", i).isTrue();
        assertThat(health.path("components").has("etcd")).as("trainer %d health", i).isFalse();
      }
      Jobs.stopTrainers(cluster);
    }
  }

  private static Map<String, String> registeredTrainers(EtcdCoordinator etcd) {
    String prefix = etcd.keys().trainersPrefix();
    Map<String, String> out = new HashMap<>();
    for (KeyValueStore.KeyValue kv : etcd.kv().getPrefix(prefix)) {
      out.put(kv.key().substring(prefix.length()), kv.valueAsString());
    }
    return out;
  }

  /** The trainer ids on the leading master's console ({@code GET /admin/job}). */
  private static Set<String> consoleTrainers(LocalCluster cluster) {
    for (int m = 0; m < 2; m++) {
      Optional<JsonNode> job =
          tryGet(cluster.process(Role.MASTER, m).httpPort(), "/admin/job", cluster.adminToken());
      if (job.isPresent()) {
        Set<String> ids = new HashSet<>();
        job.get().path("trainers").forEach(t -> ids.add(t.path("id").asString()));
        return ids;
      }
    }
    return Set.of();
  }

  private static Optional<JsonNode> tryGet(int port, String path, String token) {
    try {
      return Optional.of(get(port, path, token));
    } catch (Exception e) {
      return Optional.empty();
    }
  }

  /** GET as JSON; fails unless 200. */
  private static JsonNode get(int port, String path, String token) throws Exception {
    HttpRequest.Builder req =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10));
    if (token != null) {
      req.header("Authorization", "Bearer " + token);
    }
    HttpResponse<String> r = HttpClient.newHttpClient().send(req.build(), BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IllegalStateException(path + " answered " + r.statusCode());
    }
    return new ObjectMapper().readTree(r.body());
  }
}
