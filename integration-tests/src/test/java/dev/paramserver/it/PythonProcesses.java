package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.paramserver.coordination.EtcdCoordinator;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * Python processes of the end-to-end tests: Debian's {@code /usr/bin/python3} with {@code
 * clients/python} on its path, started with their output in a log file and killed in the tests'
 * finally blocks. As {@link PythonClientUnitTest}, a test is skipped, saying why, only when that
 * python3 lacks what the client needs ({@code scripts/install-deps.sh} installs it; CI has it).
 */
final class PythonProcesses {
  static final Path PYTHON = Path.of("/usr/bin/python3");
  static final Path REPO = Path.of("..").toAbsolutePath().normalize();
  static final Path CLIENT = REPO.resolve("clients/python");
  static final Path TRAIN_MLP = REPO.resolve("examples/python/train_mlp.py");
  static final Path E2E = CLIENT.resolve("tests/e2e");

  private PythonProcesses() {}

  /**
   * Skips the test unless {@code /usr/bin/python3} has the client's modules (PyTorch with {@code
   * torch}) and the stub generator; then generates the gRPC stubs once, so that the processes
   * started together do not.
   */
  static void assumeUsable(Path tmp, boolean torch) throws Exception {
    assumeThat(Files.isExecutable(PYTHON))
        .as("/usr/bin/python3 is missing (scripts/install-deps.sh installs it)")
        .isTrue();
    String modules =
        torch
            ? "'torch', 'numpy', 'grpc', 'google.protobuf'"
            : "'numpy', 'grpc', 'google.protobuf'";
    Path check = tmp.resolve("python-check.log");
    Process p =
        start(
            check,
            "-c",
            "import importlib.util as u, os; print(' '.join([m for m in ("
                + modules
                + ") if u.find_spec(m.split('.')[0]) is None] + [p for p in ('/usr/bin/protoc',"
                + " '/usr/bin/grpc_python_plugin', '/usr/include/google/protobuf/struct.proto')"
                + " if not os.path.exists(p)]))");
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("python3 module check").isTrue();
    String missing = Files.readString(check, StandardCharsets.UTF_8).strip();
    assumeThat(missing)
        .as("/usr/bin/python3 lacks what the Python client needs: " + missing)
        .isEmpty();
    Path gen = tmp.resolve("python-gen.log");
    Process g = start(gen, "-m", "paramserver.gen");
    assertThat(g.waitFor(120, TimeUnit.SECONDS)).as("python3 -m paramserver.gen").isTrue();
    assertThat(g.exitValue()).as("python3 -m paramserver.gen:\n%s", tail(gen, 30)).isZero();
  }

  /**
   * Starts {@code python3 args...} with the client on PYTHONPATH, stdout and stderr to {@code log}.
   */
  static Process start(Path log, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(PYTHON.toString());
    command.addAll(Arrays.asList(args));
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .directory(REPO.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    pb.environment().put("PYTHONPATH", CLIENT.toString());
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    pb.environment().put("PYTHONUNBUFFERED", "1");
    return pb.start();
  }

  /**
   * {@code kill -9}: the python process itself (its own children first, should it have any), then
   * waits for it to be gone.
   */
  static void kill(Process p) throws InterruptedException {
    if (p == null) {
      return;
    }
    p.descendants().forEach(ProcessHandle::destroyForcibly);
    p.destroyForcibly();
    p.waitFor(10, TimeUnit.SECONDS);
  }

  /** The log's text ("" if it does not exist yet). */
  static String read(Path log) {
    try {
      return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The last {@code n} lines of the log, for failure messages. */
  static String tail(Path log, int n) {
    List<String> lines = read(log).lines().toList();
    return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
  }

  /** The value of {@code key=} on the log's PYRESULT line, or null. */
  static String pyresult(Path log, String key) {
    for (String line : read(log).lines().toList()) {
      if (line.startsWith("PYRESULT ")) {
        for (String field : line.substring(9).split(" ")) {
          if (field.startsWith(key + "=")) {
            return field.substring(key.length() + 1);
          }
        }
      }
    }
    return null;
  }

  /** The trainer ids registered in etcd ({@code trainers/<id>}). */
  static Set<String> registeredTrainers(EtcdCoordinator etcd) {
    String prefix = etcd.keys().trainersPrefix();
    Set<String> out = new TreeSet<>();
    for (KeyValueStore.KeyValue kv : etcd.kv().getPrefix(prefix)) {
      out.add(kv.key().substring(prefix.length()));
    }
    return out;
  }

  /** The trainer ids on the (single) master's console, {@code GET /admin/job}; empty on error. */
  static Set<String> consoleTrainers(LocalCluster cluster) {
    try {
      HttpResponse<String> r =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create(
                              "http://127.0.0.1:"
                                  + cluster.process(Role.MASTER, 0).httpPort()
                                  + "/admin/job"))
                      .header("Authorization", "Bearer " + cluster.adminToken())
                      .timeout(Duration.ofSeconds(10))
                      .build(),
                  BodyHandlers.ofString());
      Set<String> ids = new TreeSet<>();
      if (r.statusCode() == 200) {
        JsonNode job = new ObjectMapper().readTree(r.body());
        job.path("trainers").forEach(t -> ids.add(t.path("id").asText()));
      }
      return ids;
    } catch (IOException e) {
      return Set.of();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Set.of();
    }
  }
}
