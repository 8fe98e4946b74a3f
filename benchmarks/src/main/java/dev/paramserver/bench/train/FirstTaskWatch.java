package dev.paramserver.bench.train;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * When the master hands out a job's first task, seen through its leader's {@code /admin/status}.
 * That status is read from the task queue the master swaps in once a dispatch is persisted in etcd,
 * right before the GetTask answer goes out, so the first status with a task pending or done (or a
 * later pass) marks the hand-out; no other record has the instant (the master logs no dispatch, and
 * its etcd snapshot keeps a pending task's deadline, not when it was handed out). The watch polls
 * every {@link #POLL} from launch on a thread of its own, because the cluster's start returns only
 * when every process listens, which may be after the first task. The hand-out lies between the last
 * poll that saw none and the answer of the first that saw one; the later is kept, so the figure is
 * at most one poll and one status call late, never early.
 *
 * <p>At the hand-out it also reads the CPU time every process of the job has used since it started
 * ({@code /proc/<pid>/stat}: master, pserver, trainer, etcd), and how much of it their JIT compiler
 * threads took: a figure the load of a shared machine changes far less than the seconds.
 */
final class FirstTaskWatch implements AutoCloseable {
  static final Duration POLL = Duration.ofMillis(25);

  private final LocalCluster cluster;
  private final long launchedNanos;
  private final Thread thread;
  // when the answer of the first status showing a task came back; -1 until then
  private volatile long seenNanos = -1;
  // when the last poll that showed no task was sent
  private volatile long lastMissNanos;
  // CPU seconds per process (and "jit", "total") at the hand-out; empty until then
  private volatile Map<String, Double> cpu = Map.of();

  private FirstTaskWatch(LocalCluster cluster, long launchedNanos) {
    this.cluster = cluster;
    this.launchedNanos = launchedNanos;
    this.lastMissNanos = launchedNanos;
    this.thread = new Thread(this::poll, "first-task-watch");
    this.thread.setDaemon(true);
  }

  /** Starts watching {@code cluster}, launched (its first process started) at {@code nanos}. */
  static FirstTaskWatch start(LocalCluster cluster, long launchedNanos) {
    FirstTaskWatch w = new FirstTaskWatch(cluster, launchedNanos);
    w.thread.start();
    return w;
  }

  /** Whether the job in {@code status} has handed out at least one task. */
  static boolean handedOut(JobStatusView status) {
    JobStatusView.TaskCounts t = status.tasks();
    return status.pass() > 0
        || status.isFinished()
        || status.isFailed()
        || t.pending() + t.done() + t.failed() > 0;
  }

  private void poll() {
    while (!Thread.currentThread().isInterrupted()) {
      long sent = System.nanoTime();
      Optional<JobStatusView> status;
      try {
        status = cluster.jobStatus();
      } catch (RuntimeException e) {
        // a master half up may answer oddly: look again rather than lose the watch
        status = Optional.empty();
      }
      if (status.isPresent() && handedOut(status.get())) {
        seenNanos = System.nanoTime();
        cpu = cpuSeconds(cluster);
        return;
      }
      lastMissNanos = sent;
      try {
        Thread.sleep(POLL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Seconds from launch to the first task (at most one poll late); NaN when not seen yet. */
  double seconds() {
    long seen = seenNanos;
    return seen < 0 ? Double.NaN : (seen - launchedNanos) / 1e9;
  }

  /** How much earlier than {@link #seconds()} the hand-out may have been; NaN when not seen. */
  double uncertaintySeconds() {
    long seen = seenNanos;
    return seen < 0 ? Double.NaN : (seen - lastMissNanos) / 1e9;
  }

  /**
   * CPU seconds each process of the job used up to the first task ({@code cpu <process>}), their
   * sum ({@code cpu total}) and the part of it in live JIT compiler threads ({@code cpu jit});
   * empty when not seen yet or not on Linux.
   */
  Map<String, Double> cpu() {
    return cpu;
  }

  private static Map<String, Double> cpuSeconds(LocalCluster cluster) {
    Map<String, Double> out = new LinkedHashMap<>();
    double total = 0;
    double jit = 0;
    try {
      for (ProcessInfo p : cluster.processes()) {
        double[] s = cpuOf(p.pid());
        out.put("cpu " + p.name(), s[0]);
        total += s[0];
        jit += s[1];
      }
      double[] etcd = cpuOf(cluster.etcdPid());
      out.put("cpu etcd", etcd[0]);
      total += etcd[0];
    } catch (IOException | RuntimeException e) {
      return Map.of();
    }
    out.put("cpu jit", jit);
    out.put("cpu total", total);
    return out;
  }

  /** A process's CPU seconds (user + system) and those of its live JIT compiler threads. */
  private static double[] cpuOf(long pid) throws IOException {
    Path proc = Path.of("/proc", Long.toString(pid));
    double all = ticks(Files.readString(proc.resolve("stat")));
    double jit = 0;
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(proc.resolve("task"))) {
      for (Path t : tasks) {
        try {
          String stat = Files.readString(t.resolve("stat"));
          if (stat.contains("(C1 CompilerThre") || stat.contains("(C2 CompilerThre")) {
            jit += ticks(stat);
          }
        } catch (IOException e) {
          // the thread ended meanwhile
        }
      }
    }
    return new double[] {all, jit};
  }

  /** utime + stime of a {@code stat} line, in seconds (fields 14 and 15, after the name). */
  private static double ticks(String stat) {
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
  }

  /** Stops polling (if still at it) and waits for the thread to end. */
  @Override
  public void close() throws InterruptedException {
    thread.interrupt();
    thread.join(Duration.ofSeconds(15).toMillis());
  }
}
