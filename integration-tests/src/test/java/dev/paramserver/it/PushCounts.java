package dev.paramserver.it;

import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.ProcessState;
import dev.paramserver.localcluster.Role;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;

/**
 * The push accounting of a job's end, read from the running processes: each pserver's update count
 * ({@code step} in its admin status, by shard index; a backup's, index -1, is not counted), the
 * push requests the trainers had acknowledged per pserver index ({@code
 * paramserver_trainer_pushes_acknowledged_total{pserver}}), and the trainers' {@code
 * paramserver_trainer_dropped_pushes_total}.
 *
 * <p>Every trainer process that is alive is read, also one the supervisor still shows as STARTING:
 * a process resumed after SIGSTOP is STARTING until the supervisor's next probe (up to 250 ms), and
 * a read in that window that skipped it summed the other trainer's acknowledgements only (a CI run
 * reported 976 updates of each shard against 874 acknowledged: the 102 of the paused trainer were
 * missing). A trainer whose counts cannot be read (exited, restarted, paused, not answering) is
 * listed in {@code unread}: then the sums are not the job's and must not be compared.
 *
 * @param applied updates of each shard
 * @param acknowledged push requests acknowledged by each shard, summed over the trainers
 * @param dropped pushes the trainers gave up
 * @param byTrainer each trainer's acknowledged push requests by shard (the terms of {@code
 *     acknowledged})
 * @param unread trainers whose counts could not be read, with their state
 */
record PushCounts(
    Map<Integer, Long> applied,
    Map<Integer, Long> acknowledged,
    long dropped,
    Map<String, Map<Integer, Long>> byTrainer,
    List<String> unread) {
  private static final Pattern ACKNOWLEDGED =
      Pattern.compile(
          "^paramserver_trainer_pushes_acknowledged_total\\{[^}]*pserver=\"(\\d+)\"[^}]*} (\\S+)$",
          Pattern.MULTILINE);
  private static final Pattern DROPPED =
      Pattern.compile(
          "^paramserver_trainer_dropped_pushes_total(?:\\{[^}]*})? (\\S+)$", Pattern.MULTILINE);

  /** Reads the counts of the processes alive now. */
  static PushCounts read(LocalCluster cluster) throws Exception {
    Map<Integer, Long> applied = new TreeMap<>();
    Map<Integer, Long> acknowledged = new TreeMap<>();
    Map<String, Map<Integer, Long>> byTrainer = new TreeMap<>();
    List<String> unread = new ArrayList<>();
    long dropped = 0;
    for (ProcessInfo p : cluster.processes()) {
      if (p.role() != Role.PSERVER && p.role() != Role.TRAINER) {
        continue;
      }
      if (!isRead(p)) {
        if (p.role() == Role.TRAINER) {
          unread.add(p.name() + " (" + p.state() + ")");
        }
        continue;
      }
      if (p.role() == Role.PSERVER) {
        JsonNode s;
        try {
          s = cluster.adminStatus(Role.PSERVER, p.index());
        } catch (IOException | RuntimeException e) {
          if (p.state() == ProcessState.RUNNING) {
            throw e;
          }
          continue; // a pserver still starting: its shard shows as missing from applied
        }
        if (s.path("index").asInt() >= 0) { // -1: a backup (replicas), counted by its primary
          applied.put(s.path("index").asInt(), s.path("step").asLong());
        }
        continue;
      }
      String metrics;
      try {
        metrics = Jobs.scrapePrometheus(p.httpPort());
      } catch (Exception | AssertionError e) {
        if (p.state() == ProcessState.RUNNING) {
          throw e;
        }
        unread.add(p.name() + " (STARTING, not answering: " + e.getMessage() + ")");
        continue;
      }
      Matcher d = DROPPED.matcher(metrics);
      if (!d.find()) {
        throw new AssertionError(p.name() + " shows no paramserver_trainer_dropped_pushes_total");
      }
      dropped += (long) Double.parseDouble(d.group(1));
      Map<Integer, Long> mine = new TreeMap<>();
      Matcher a = ACKNOWLEDGED.matcher(metrics);
      while (a.find()) {
        long n = (long) Double.parseDouble(a.group(2));
        mine.merge(Integer.parseInt(a.group(1)), n, Long::sum);
        acknowledged.merge(Integer.parseInt(a.group(1)), n, Long::sum);
      }
      byTrainer.put(p.name(), mine);
    }
    return new PushCounts(applied, acknowledged, dropped, byTrainer, unread);
  }

  /**
   * Whether {@link #read} asks {@code p} for its counts: RUNNING, or STARTING (just launched, when
   * it may not answer yet and has no counts, or just resumed after SIGSTOP, when it has).
   */
  static boolean isRead(ProcessInfo p) {
    return p.state() == ProcessState.RUNNING || p.state() == ProcessState.STARTING;
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
