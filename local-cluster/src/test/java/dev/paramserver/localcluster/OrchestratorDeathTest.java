package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/** Children must not outlive an orchestrator that is killed without a chance to stop them. */
class OrchestratorDeathTest {
  @TempDir Path runDir;

  @Test
  void killingTheOrchestratorWithSigkill_endsEveryChildAndEtcd() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process orchestrator =
        new ProcessBuilder(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                OrphanProbe.class.getName(),
                runDir.toString())
            .redirectErrorStream(true)
            .redirectOutput(runDir.resolve("probe.log").toFile())
            .start();
    List<Long> pids = new ArrayList<>();
    try {
      Path file = runDir.resolve("cluster.json");
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> runningPids(file).size() == 4); // etcd + 3 processes
      pids.addAll(runningPids(file));
      assertThat(pids).allMatch(OrchestratorDeathTest::alive);

      orchestrator.destroyForcibly(); // SIGKILL: no shutdown hook runs

      await()
          .atMost(Duration.ofSeconds(20))
          .until(() -> pids.stream().noneMatch(OrchestratorDeathTest::alive));
    } finally {
      orchestrator.destroyForcibly();
      pids.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
    }
  }

  private static List<Long> runningPids(Path file) {
    List<Long> pids = new ArrayList<>();
    try {
      if (!Files.exists(file)) {
        return pids;
      }
      JsonNode json = new ObjectMapper().readTree(file.toFile());
      if (json.path("etcd").path("pid").isNumber()) {
        pids.add(json.path("etcd").path("pid").asLong());
      }
      for (JsonNode p : json.path("processes")) {
        if (p.path("state").asString().equals("RUNNING")) {
          pids.add(p.path("pid").asLong());
        }
      }
    } catch (tools.jackson.core.JacksonException e) {
      pids.clear(); // read while being replaced: try again
    }
    return pids;
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }
}
