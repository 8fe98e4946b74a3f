package dev.paramserver.localcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

class ClusterFileTest {
  @TempDir Path dir;

  @Test
  void write_replacesTheFileWithEveryProcessAndNoTempLeft() throws Exception {
    ClusterFile file = new ClusterFile(dir);
    ClusterFile.EtcdInfo etcd = new ClusterFile.EtcdInfo("http://127.0.0.1:2379", 42, dir);
    file.write("j", etcd, "tok", List.of());
    file.write(
        "j",
        etcd,
        "tok",
        List.of(
            new ProcessInfo(
                Role.PSERVER, 1, 1234, 8080, 9090, dir.resolve("p.log"), ProcessState.RUNNING, 2),
            new ProcessInfo(
                Role.TRAINER, 0, -1, 8081, 0, dir.resolve("t.log"), ProcessState.NEW, 0)));

    JsonNode json = new ObjectMapper().readTree(dir.resolve("cluster.json").toFile());
    assertThat(json.path("job").asString()).isEqualTo("j");
    assertThat(json.path("adminToken").asString()).isEqualTo("tok");
    assertThat(json.path("etcd").path("endpoint").asString()).isEqualTo("http://127.0.0.1:2379");
    assertThat(json.path("etcd").path("pid").asLong()).isEqualTo(42);
    assertThat(json.path("etcd").path("dataDir").asString()).isEqualTo(dir.toString());
    JsonNode p = json.path("processes").get(0);
    assertThat(p.path("role").asString()).isEqualTo("pserver");
    assertThat(p.path("index").asInt()).isEqualTo(1);
    assertThat(p.path("pid").asLong()).isEqualTo(1234);
    assertThat(p.path("httpPort").asInt()).isEqualTo(8080);
    assertThat(p.path("grpcPort").asInt()).isEqualTo(9090);
    assertThat(p.path("log").asString()).isEqualTo(dir.resolve("p.log").toString());
    assertThat(p.path("state").asString()).isEqualTo("RUNNING");
    assertThat(p.path("restarts").asInt()).isEqualTo(2);
    JsonNode t = json.path("processes").get(1);
    assertThat(t.path("pid").isNull()).isTrue();
    assertThat(t.path("grpcPort").isNull()).isTrue();
    assertThat(json.path("updated").asString()).isNotBlank();
    try (var files = Files.list(dir)) {
      assertThat(files.map(f -> f.getFileName().toString())).containsExactly("cluster.json");
    }
  }
}
