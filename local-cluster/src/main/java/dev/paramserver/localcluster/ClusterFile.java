package dev.paramserver.localcluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.List;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Writes {@code cluster.json}: the job, etcd, the admin token and every process, replaced
 * atomically (temp file + rename) so a reader never sees half a file.
 */
final class ClusterFile {
  static final String NAME = "cluster.json";
  private static final ObjectMapper JSON =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

  private final Path file;

  ClusterFile(Path runDir) {
    this.file = runDir.resolve(NAME);
  }

  Path path() {
    return file;
  }

  /** What cluster.json shows of etcd. */
  record EtcdInfo(String endpoint, long pid, Path dataDir) {}

  synchronized void write(
      String job, EtcdInfo etcd, String adminToken, List<ProcessInfo> processes) {
    ObjectNode root = JSON.createObjectNode();
    root.put("job", job);
    ObjectNode e = root.putObject("etcd");
    e.put("endpoint", etcd.endpoint());
    if (etcd.pid() > 0) {
      e.put("pid", etcd.pid());
    } else {
      e.putNull("pid");
    }
    e.put("dataDir", etcd.dataDir().toString());
    root.put("adminToken", adminToken);
    ArrayNode list = root.putArray("processes");
    for (ProcessInfo p : processes) {
      ObjectNode n = list.addObject();
      n.put("role", p.role().id());
      n.put("index", p.index());
      n.put("name", p.name());
      if (p.pid() > 0) {
        n.put("pid", p.pid());
      } else {
        n.putNull("pid");
      }
      n.put("httpPort", p.httpPort());
      if (p.grpcPort() > 0) {
        n.put("grpcPort", p.grpcPort());
      } else {
        n.putNull("grpcPort");
      }
      n.put("log", p.log().toString());
      n.put("state", p.state().name());
      n.put("restarts", p.restarts());
    }
    root.put("updated", Instant.now().toString());
    Path tmp = file.resolveSibling(NAME + ".tmp");
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(tmp, JSON.writeValueAsString(root));
      try {
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException ex) {
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException ex) {
      throw new UncheckedIOException("could not write " + file, ex);
    }
  }
}
