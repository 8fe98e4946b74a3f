package dev.paramserver.bench.train;

import dev.paramserver.localcluster.JobStatusView;

/**
 * The training section's rate of a distributed job: the records of the tasks the master counted
 * finished between T0, the end of an unmeasured warm-up pass (pass 0: class loading and most of the
 * JIT; {@link WarmupWatch}), and T1, the end of the last pass (its last task), divided by the wall
 * time between them. Passes overlap (the next pass's tasks are leased ahead while a pass ends), so
 * the sum of the passes' durations counts some wall time twice; that old figure is kept for one
 * release as {@code ..._pass_duration_rate} ({@link #passDurationRate}).
 */
final class Yardstick {
  private Yardstick() {}

  /**
   * A measured window.
   *
   * @param records records of the tasks finished in it
   * @param seconds its wall time
   * @param aheadRecords records of pass 1 or later already finished at T0 (the work leased ahead,
   *     outside the window)
   * @param t0Nanos T0 as {@link System#nanoTime}
   * @param t1Nanos T1 as {@link System#nanoTime}
   */
  record Window(long records, double seconds, long aheadRecords, long t0Nanos, long t1Nanos) {
    double rate() {
      return records > 0 && seconds > 0 ? records / seconds : Double.NaN;
    }
  }

  /**
   * The window of the finished job {@code end}, from T0 {@code mark} to the end of its last pass.
   * Without a mark, or with one taken after the last pass ended (the watch missed the warm-up's
   * end: a job too short to poll), T0 is pass 0's end and the window's records those of the later
   * passes, some of which may have been done before: an upper bound of the rate. NaN rate for a job
   * of one pass.
   *
   * @param launchedMs the job's launch, wall clock
   * @param launchedNanos the same instant as {@link System#nanoTime}, to place T1 on that clock
   */
  static Window of(JobStatusView end, WarmupWatch.Mark mark, long launchedMs, long launchedNanos) {
    long total = 0;
    long lastEnd = 0;
    long warmupEnd = 0;
    long warmupRecords = 0;
    for (JobStatusView.PassView p : end.passes()) {
      total += p.records();
      lastEnd = Math.max(lastEnd, p.endedMs());
      if (p.pass() == 0) {
        warmupEnd = p.endedMs();
        warmupRecords = p.records();
      }
    }
    long t1Nanos = launchedNanos + (lastEnd - launchedMs) * 1_000_000L;
    if (end.passes().size() < 2 || warmupEnd <= 0) {
      return new Window(0, Double.NaN, 0, t1Nanos, t1Nanos);
    }
    if (mark == null || mark.wallMs() >= lastEnd) {
      long t0Nanos = launchedNanos + (warmupEnd - launchedMs) * 1_000_000L;
      return new Window(total - warmupRecords, (lastEnd - warmupEnd) / 1000.0, 0, t0Nanos, t1Nanos);
    }
    return new Window(
        total - mark.records(),
        (lastEnd - mark.wallMs()) / 1000.0,
        mark.aheadRecords(),
        mark.nanos(),
        t1Nanos);
  }

  /**
   * The old figure: records of the second half of the passes ({@link TrainSuite#firstSteadyPass})
   * over the sum of their durations, which overlap.
   */
  static double passDurationRate(JobStatusView end, int passes) {
    long records = 0;
    long millis = 0;
    for (JobStatusView.PassView p : end.passes()) {
      if (p.pass() >= TrainSuite.firstSteadyPass(passes)) {
        records += p.records();
        millis += Math.max(1, p.endedMs() - p.startedMs());
      }
    }
    return records * 1000.0 / Math.max(1, millis);
  }
}
