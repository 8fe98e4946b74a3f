package dev.paramserver.bench.train;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import java.time.Duration;
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

  /** Stops polling (if still at it) and waits for the thread to end. */
  @Override
  public void close() throws InterruptedException {
    thread.interrupt();
    thread.join(Duration.ofSeconds(15).toMillis());
  }
}
