package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JarLocator;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.Role;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/** Shared pieces of the end-to-end tests: the service jars and the accounting checks. */
final class Jobs {
  private Jobs() {}

  private static Map<Role, Path> jars;

  /**
   * The exec jar of the role, from this repository; refuses jars older than the sources they were
   * built from, so the tests never run old code.
   */
  static synchronized Path jar(Role role) {
    if (jars == null) {
      jars = JarLocator.locateFresh();
    }
    return jars.get(role);
  }

  /** A spec with the three service jars of this build. */
  static ClusterSpec.Builder spec(Path runDir) {
    ClusterSpec.Builder b = ClusterSpec.builder(runDir);
    for (Role r : new Role[] {Role.MASTER, Role.PSERVER, Role.TRAINER}) {
      b.jar(r, jar(r));
    }
    return b;
  }

  /**
   * Stops the cluster's trainers (SIGTERM, as {@link LocalCluster#stop}) once the test is done with
   * them. A trainer started with {@code paramserver.trainer.exit-when-done=false} stays up after
   * the job, and closing a cluster whose job has ended first waits the whole stop timeout (20 s)
   * for such trainers to exit on their own: stopping them first saves that wait.
   */
  static void stopTrainers(LocalCluster cluster) {
    for (ProcessInfo p : cluster.processes()) {
      if (p.role() == Role.TRAINER) {
        cluster.stop(Role.TRAINER, p.index());
      }
    }
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

  /** The Prometheus text of a service ({@code /actuator/prometheus}), checked to answer 200. */
  static String scrapePrometheus(int httpPort) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + httpPort + "/actuator/prometheus"))
                    .timeout(Duration.ofSeconds(10))
                    .build(),
                BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    return r.body();
  }
}
