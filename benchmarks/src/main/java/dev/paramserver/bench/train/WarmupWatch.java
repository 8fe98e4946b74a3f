package dev.paramserver.bench.train;

import dev.paramserver.bench.cpu.CpuSampler;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import java.time.Duration;
import java.util.Optional;

/**
 * The start of a job's measured window, T0: the first look at the master after its warm-up pass
 * (pass 0) ended, with the records of every task the master counted finished by then (the warm-up
 * pass's and those of the next pass, leased ahead and done before it ended). The yardstick ({@link
 * Yardstick}) counts the records finished after it. Polls the leader's status every {@link #POLL}
 * on a thread of its own and stops at the first status that shows pass 0 ended; the records and the
 * instant come from that one answer, so the pair is exact up to one status call.
 */
final class WarmupWatch implements AutoCloseable {
  static final Duration POLL = Duration.ofMillis(100);

  /** T0: wall-clock ms, nanoTime, records counted finished then, of them ahead of pass 1. */
  record Mark(long wallMs, long nanos, long records, long aheadRecords) {}

  private final LocalCluster cluster;
  private final CpuSampler sampler;
  private final Thread thread;
  private volatile Mark mark;

  private WarmupWatch(LocalCluster cluster, CpuSampler sampler) {
    this.cluster = cluster;
    this.sampler = sampler;
    this.thread = new Thread(this::poll, "warmup-watch");
    this.thread.setDaemon(true);
  }

  /** Starts watching {@code cluster}; {@code sampler} (or null) takes a sample at T0. */
  static WarmupWatch start(LocalCluster cluster, CpuSampler sampler) {
    WarmupWatch w = new WarmupWatch(cluster, sampler);
    w.thread.start();
    return w;
  }

  /** T0 of {@code status} seen at {@code wallMs}/{@code nanos}, or null before pass 0 ended. */
  static Mark markOf(JobStatusView status, long wallMs, long nanos) {
    long records = 0;
    long warmup = -1;
    for (JobStatusView.PassView p : status.passes()) {
      records += p.records();
      if (p.pass() == 0) {
        if (p.endedMs() <= 0) {
          return null;
        }
        warmup = p.records();
      }
    }
    return warmup < 0 ? null : new Mark(wallMs, nanos, records, records - warmup);
  }

  private void poll() {
    while (!Thread.currentThread().isInterrupted()) {
      Optional<JobStatusView> status;
      try {
        status = cluster.jobStatus();
      } catch (RuntimeException e) {
        status = Optional.empty();
      }
      if (status.isPresent()) {
        Mark m = markOf(status.get(), System.currentTimeMillis(), System.nanoTime());
        if (m != null) {
          if (sampler != null) {
            sampler.sampleNow();
          }
          mark = m;
          return;
        }
      }
      try {
        Thread.sleep(POLL.toMillis());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** T0, or null when the watch did not see pass 0 end (yet). */
  Mark mark() {
    return mark;
  }

  @Override
  public void close() throws InterruptedException {
    thread.interrupt();
    thread.join(Duration.ofSeconds(15).toMillis());
  }
}
