package dev.paramserver.bench.wire;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Drives {@code threads} client threads in a closed loop (each runs its next operation as soon as
 * the last one finished): a warm-up, then a measured window in which every operation's latency is
 * recorded.
 */
final class LoadRunner {
  private static final int MIN_OPS = 5;
  private static final long MAX_EXTRA_MS = 8000;

  private LoadRunner() {}

  /**
   * Throughput and latency of one measured window, from {@code startNanos} to {@code endNanos}
   * ({@link System#nanoTime}).
   */
  record Result(
      long ops,
      double seconds,
      double gbPerSec,
      double p50Us,
      double p99Us,
      long startNanos,
      long endNanos) {}

  static Result run(Op.Factory factory, int threads, long bytesPerOp, long warmupMs, long measureMs)
      throws Exception {
    List<Op> ops = new ArrayList<>();
    try {
      for (int i = 0; i < threads; i++) {
        ops.add(factory.create());
      }
      CyclicBarrier start = new CyclicBarrier(threads);
      long[][] latencies = new long[threads][];
      long[] counts = new long[threads];
      long[] lastEnd = new long[threads];
      long[] measureStart = new long[1];
      AtomicReference<Throwable> failure = new AtomicReference<>();
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int ti = t;
        Thread w =
            new Thread(
                () -> {
                  long[] lat = new long[4096];
                  int n = 0;
                  try {
                    Op op = ops.get(ti);
                    start.await();
                    long t0 = System.nanoTime();
                    long warmEnd = t0 + warmupMs * 1_000_000L;
                    long end = warmEnd + measureMs * 1_000_000L;
                    // slow operations: keep going until a few were measured, within limits
                    long hardEnd = end + MAX_EXTRA_MS * 1_000_000L;
                    if (ti == 0) {
                      measureStart[0] = warmEnd;
                    }
                    while (true) {
                      long s = System.nanoTime();
                      if (s >= end && (n >= MIN_OPS || s >= hardEnd)) {
                        break;
                      }
                      op.run();
                      long e = System.nanoTime();
                      if (s >= warmEnd) {
                        if (n == lat.length) {
                          lat = Arrays.copyOf(lat, n * 2);
                        }
                        lat[n++] = e - s;
                        lastEnd[ti] = e;
                      }
                    }
                  } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                  }
                  latencies[ti] = Arrays.copyOf(lat, n);
                  counts[ti] = n;
                },
                "load-" + t);
        workers.add(w);
        w.start();
      }
      for (Thread w : workers) {
        w.join();
      }
      if (failure.get() != null) {
        throw new IllegalStateException("benchmark client failed: " + failure.get(), failure.get());
      }
      long total = 0;
      long end = 0;
      for (int t = 0; t < threads; t++) {
        total += counts[t];
        end = Math.max(end, lastEnd[t]);
      }
      long[] all = new long[(int) total];
      int k = 0;
      for (long[] l : latencies) {
        System.arraycopy(l, 0, all, k, l.length);
        k += l.length;
      }
      Arrays.sort(all);
      double secs = Math.max(1e-9, (end - measureStart[0]) / 1e9);
      if (total == 0) {
        return new Result(0, secs, Double.NaN, Double.NaN, Double.NaN, measureStart[0], end);
      }
      return new Result(
          total,
          secs,
          total * (double) bytesPerOp / secs / 1e9,
          percentile(all, 0.50) / 1e3,
          percentile(all, 0.99) / 1e3,
          measureStart[0],
          end);
    } finally {
      for (Op op : ops) {
        op.close();
      }
    }
  }

  static double percentile(long[] sorted, double q) {
    int i = (int) Math.ceil(q * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }
}
