package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FreePorts;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;

/**
 * A serving replica with another token than the job's, following a real pserver found through a
 * real etcd: the pserver refuses its ShardFollow calls, and the replica's {@code /admin/status}
 * says why for the shard (the status code and the pserver's description) while it stays LOADING.
 */
@ExtendWith(PlainLogging.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ServingFollowRefusedTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  @Test
  void followWithAWrongToken_isRefused_andTheStatusGivesTheReason() throws Exception {
    String job = etcd.uniqueJob();
    Path checkpoints = TempDirs.create("serving-refused-ckpt");
    ConfigurableApplicationContext pserver = null;
    ConfigurableApplicationContext serving = null;
    try (EtcdCoordinator coordinator =
        EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      pserver = ServingContexts.startPserver(coordinator, etcd.endpoint(), checkpoints);
      String primary = coordinator.kv().get(coordinator.keys().ps(0)).orElseThrow().valueAsString();

      serving =
          ServingContexts.start(
              FreePorts.next(),
              "--paramserver.etcd.endpoints=" + etcd.endpoint(),
              "--paramserver.job=" + job,
              "--paramserver.admin.token=not-the-jobs");
      AdminClient admin =
          AdminClient.create(
              "the serving replica",
              ServingContexts.http(serving),
              "not-the-jobs",
              Duration.ofSeconds(10));
      AtomicReference<JsonNode> status = new AtomicReference<>();
      Poll.until(
          Duration.ofSeconds(30),
          Duration.ofMillis(200),
          () -> {
            status.set(statusOf(admin));
            JsonNode shards = status.get().path("shards");
            return shards.size() == 1 && !shards.get(0).path("lastRefusal").asString().isEmpty();
          },
          "the replica's status to give shard 0's refusal");

      assertThat(status.get().path("state").asString()).isEqualTo("LOADING");
      JsonNode shard = status.get().path("shards").get(0);
      assertThat(shard.path("index").asInt()).isZero();
      assertThat(shard.path("connected").asBoolean()).isFalse();
      assertThat(shard.path("primary").asString()).isEqualTo(primary);
      assertThat(shard.path("lastRefusal").asString())
          .startsWith("UNAUTHENTICATED: ")
          .contains("needs the job's token")
          .contains("carried another");
    } finally {
      if (serving != null) {
        serving.close();
      }
      if (pserver != null) {
        pserver.close();
      }
      TempDirs.deleteRecursively(checkpoints);
    }
  }

  private static JsonNode statusOf(AdminClient admin) {
    try {
      return admin.statusJson();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while reading the replica's status", e);
    }
  }
}
