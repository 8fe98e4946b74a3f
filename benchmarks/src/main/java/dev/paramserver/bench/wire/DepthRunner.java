package dev.paramserver.bench.wire;

import java.util.Arrays;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Keeps {@code depth} operations in flight on one client (one channel or one connection): a new
 * operation starts as soon as one finishes, the way ps-lite's benchmark drives a worker. A warm-up,
 * then a measured window: throughput counts the operations that finished inside the window, latency
 * (start to finish, queueing behind the other in-flight operations included) those started in it.
 */
final class DepthRunner {
  private static final int MIN_OPS = 5;
  private static final long MAX_EXTRA_MS = 8000;
  private static final long DRAIN_SECONDS = 60;

  private DepthRunner() {}

  static LoadRunner.Result run(
      AsyncOp.Factory factory, int depth, long bytesPerOp, long warmupMs, long measureMs)
      throws Exception {
    try (AsyncOp op = factory.create()) {
      Semaphore slots = new Semaphore(depth);
      AtomicReference<Throwable> failure = new AtomicReference<>();
      AtomicLong inWindow = new AtomicLong();
      long[][] lat = {new long[4096]};
      int[] n = {0};
      long t0 = System.nanoTime();
      long warmEnd = t0 + warmupMs * 1_000_000L;
      long end = warmEnd + measureMs * 1_000_000L;
      long hardEnd = end + MAX_EXTRA_MS * 1_000_000L;
      long[] stop = {Long.MAX_VALUE};
      long stopAt;
      while (true) {
        long s = System.nanoTime();
        if (failure.get() != null) {
          break;
        }
        if (s >= end && (inWindow.get() >= MIN_OPS || s >= hardEnd)) {
          break;
        }
        if (!slots.tryAcquire(100, TimeUnit.MILLISECONDS)) {
          continue;
        }
        long started = System.nanoTime();
        op.start(
            new AsyncOp.Completion() {
              @Override
              public void done() {
                long e = System.nanoTime();
                if (e >= warmEnd && e <= stop[0]) {
                  inWindow.incrementAndGet();
                }
                if (started >= warmEnd) {
                  synchronized (lat) {
                    if (n[0] == lat[0].length) {
                      lat[0] = Arrays.copyOf(lat[0], n[0] * 2);
                    }
                    lat[0][n[0]++] = e - started;
                  }
                }
                slots.release();
              }

              @Override
              public void failed(Throwable t) {
                failure.compareAndSet(null, t);
                slots.release();
              }
            });
      }
      stopAt = System.nanoTime();
      long counted = inWindow.get();
      stop[0] = stopAt;
      // let what is in flight finish before the client is closed
      if (!slots.tryAcquire(depth, DRAIN_SECONDS, TimeUnit.SECONDS)) {
        throw new IllegalStateException(
            "benchmark client: operations still in flight after " + DRAIN_SECONDS + " s");
      }
      if (failure.get() != null) {
        throw new IllegalStateException("benchmark client failed: " + failure.get(), failure.get());
      }
      long[] all;
      synchronized (lat) {
        all = Arrays.copyOf(lat[0], n[0]);
      }
      Arrays.sort(all);
      double secs = Math.max(1e-9, (stopAt - warmEnd) / 1e9);
      if (counted == 0 || all.length == 0) {
        return new LoadRunner.Result(0, secs, Double.NaN, Double.NaN, Double.NaN, warmEnd, stopAt);
      }
      return new LoadRunner.Result(
          counted,
          secs,
          counted * (double) bytesPerOp / secs / 1e9,
          LoadRunner.percentile(all, 0.50) / 1e3,
          LoadRunner.percentile(all, 0.99) / 1e3,
          warmEnd,
          stopAt);
    }
  }
}
