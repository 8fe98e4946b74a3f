package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.Role;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/** Shared pieces of the end-to-end tests: the service jars and the accounting checks. */
final class Jobs {
  private Jobs() {}

  /** The repository root (tests run in integration-tests/). */
  static Path repoRoot() {
    Path cwd = Path.of("").toAbsolutePath();
    return Files.isRegularFile(cwd.resolve("master-service/pom.xml")) ? cwd : cwd.getParent();
  }

  static Path jar(Role role) throws IOException {
    Path target = repoRoot().resolve(role.module()).resolve("target");
    try (DirectoryStream<Path> ds =
        Files.newDirectoryStream(target, role.module() + "-*-exec.jar")) {
      for (Path p : ds) {
        return p;
      }
    }
    throw new IllegalStateException(
        "no exec jar in " + target + ": the services must be packaged before the end-to-end tests");
  }

  /** A spec with the three service jars of this build. */
  static ClusterSpec.Builder spec(Path runDir) throws IOException {
    ClusterSpec.Builder b = ClusterSpec.builder(runDir);
    for (Role r : new Role[] {Role.MASTER, Role.PSERVER, Role.TRAINER}) {
      b.jar(r, jar(r));
    }
    return b;
  }

  /**
   * Every task of every pass done exactly as the dataset has tasks, none failed; duplicates
   * allowed.
   */
  static void assertEveryTaskDoneInEveryPass(JobStatusView job, int passes) {
    JsonNode json = job.json();
    long tasks = number(json, "datasetTasks");
    long records = number(json, "datasetRecords");
    assertThat(tasks).as("tasks in the dataset").isPositive();
    assertThat(job.passes()).as("passes reported").hasSize(passes);
    for (JobStatusView.PassView p : job.passes()) {
      assertThat(p.tasks().done()).as("tasks done in pass %d", p.pass()).isEqualTo(tasks);
      assertThat(p.tasks().todo() + p.tasks().pending() + p.tasks().failed())
          .as("tasks not done in pass %d", p.pass())
          .isZero();
      assertThat(p.records()).as("records trained in pass %d", p.pass()).isEqualTo(records);
    }
  }

  /** A proto3-JSON integer field (int64 fields come as strings; absent means 0). */
  static long number(JsonNode parent, String field) {
    JsonNode n = parent.path(field);
    return n.isMissingNode() || n.isNull() ? 0 : n.asLong();
  }
}
