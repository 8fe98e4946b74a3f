package dev.paramserver.it;

import com.fasterxml.jackson.databind.JsonNode;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.ProcessState;
import dev.paramserver.localcluster.Role;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The push accounting of a job's end, read from the running processes: each pserver's update count
 * ({@code step} in its admin status, by shard index; a backup's, index -1, is not counted), the
 * push requests the trainers had acknowledged per pserver index ({@code
 * paramserver_trainer_pushes_acknowledged_total{pserver}}), and the trainers' {@code
 * paramserver_trainer_dropped_pushes_total}.
 *
 * @param applied updates of each shard
 * @param acknowledged push requests acknowledged by each shard, summed over the trainers
 * @param dropped pushes the trainers gave up
 */
record PushCounts(Map<Integer, Long> applied, Map<Integer, Long> acknowledged, long dropped) {
  private static final Pattern ACKNOWLEDGED =
      Pattern.compile(
          "^paramserver_trainer_pushes_acknowledged_total\\{[^}]*pserver=\"(\\d+)\"[^}]*} (\\S+)$",
          Pattern.MULTILINE);
  private static final Pattern DROPPED =
      Pattern.compile(
          "^paramserver_trainer_dropped_pushes_total(?:\\{[^}]*})? (\\S+)$", Pattern.MULTILINE);

  /** Reads the counts of the processes running now. */
  static PushCounts read(LocalCluster cluster) throws Exception {
    Map<Integer, Long> applied = new TreeMap<>();
    Map<Integer, Long> acknowledged = new TreeMap<>();
    long dropped = 0;
    for (ProcessInfo p : cluster.processes()) {
      if (p.state() != ProcessState.RUNNING) {
        continue;
      }
      if (p.role() == Role.PSERVER) {
        JsonNode s = cluster.adminStatus(Role.PSERVER, p.index());
        if (s.path("index").asInt() >= 0) { // -1: a backup (replicas), counted by its primary
          applied.put(s.path("index").asInt(), s.path("step").asLong());
        }
      } else if (p.role() == Role.TRAINER) {
        String metrics = Jobs.scrapePrometheus(p.httpPort());
        Matcher d = DROPPED.matcher(metrics);
        if (!d.find()) {
          throw new AssertionError(p.name() + " shows no paramserver_trainer_dropped_pushes_total");
        }
        dropped += (long) Double.parseDouble(d.group(1));
        Matcher a = ACKNOWLEDGED.matcher(metrics);
        while (a.find()) {
          acknowledged.merge(
              Integer.parseInt(a.group(1)), (long) Double.parseDouble(a.group(2)), Long::sum);
        }
      }
    }
    return new PushCounts(applied, acknowledged, dropped);
  }

  /**
   * Reads the counts until two readings in a row agree (pushes still in flight at the job's end
   * settle) and, if {@code balanced}, the updates equal the acknowledged pushes; gives up after 30
   * s and returns the last reading.
   */
  static PushCounts await(LocalCluster cluster, boolean balanced) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    PushCounts last = read(cluster);
    while (System.nanoTime() < deadline) {
      Thread.sleep(500); // polling interval, not a wait for a condition
      PushCounts now = read(cluster);
      boolean settled = now.equals(last);
      last = now;
      if (settled && (!balanced || now.applied().equals(now.acknowledged()))) {
        break;
      }
    }
    return last;
  }
}
