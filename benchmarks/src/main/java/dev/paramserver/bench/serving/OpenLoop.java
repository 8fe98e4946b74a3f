package dev.paramserver.bench.serving;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * An open-loop load: call {@code i} is sent at {@code start + i / rate} whether or not earlier
 * calls have answered, and its latency runs from that planned time to its answer, so a stall counts
 * against every call it delays (no coordinated omission). Calls are asynchronous; their answers
 * arrive on gRPC's executor.
 */
final class OpenLoop {
  private OpenLoop() {}

  /**
   * What a run measured: the answered calls' latencies (ms), errors, and its wall time; {@code
   * plannedMs} holds each answered call's planned send time (ms since the epoch) and {@code
   * sendLagMs} how long after it the call was actually sent (the sender thread waiting for a core
   * or a pause of this JVM: a client-side delay, not the server's), where known.
   */
  record Result(
      double[] latenciesMs,
      long errors,
      double seconds,
      int offeredPerSecond,
      long[] plannedMs,
      double[] sendLagMs) {
    Result(double[] latenciesMs, long errors, double seconds, int offeredPerSecond) {
      this(latenciesMs, errors, seconds, offeredPerSecond, new long[0], new double[0]);
    }

    double qps() {
      return latenciesMs.length / seconds;
    }

    double percentileMs(double p) {
      return OpenLoop.percentile(latenciesMs, p);
    }
  }

  /**
   * Sends {@code rate} calls a second for {@code duration}; waits up to {@code drain} for the last
   * answers, counting the calls still open then as errors.
   */
  static Result run(
      int rate, Duration duration, Duration drain, IntFunction<ListenableFuture<?>> call)
      throws InterruptedException {
    int n = (int) Math.max(1, duration.toMillis() * rate / 1000);
    long periodNs = 1_000_000_000L / rate;
    double[] latencies = new double[n];
    double[] sendLag = new double[n];
    boolean[] answered = new boolean[n];
    AtomicLong errors = new AtomicLong();
    CountDownLatch done = new CountDownLatch(n);
    long start = System.nanoTime();
    long startEpochMs = System.currentTimeMillis();
    for (int i = 0; i < n; i++) {
      long planned = start + i * periodNs;
      for (long wait = planned - System.nanoTime(); wait > 0; wait = planned - System.nanoTime()) {
        LockSupport.parkNanos(wait);
      }
      int index = i;
      ListenableFuture<?> sent = call.apply(i);
      sendLag[i] = (System.nanoTime() - planned) / 1e6;
      Futures.addCallback(
          sent,
          new FutureCallback<Object>() {
            @Override
            public void onSuccess(Object result) {
              latencies[index] = (System.nanoTime() - planned) / 1e6;
              answered[index] = true;
              done.countDown();
            }

            @Override
            public void onFailure(Throwable t) {
              errors.incrementAndGet();
              done.countDown();
            }
          },
          MoreExecutors.directExecutor());
    }
    long open = done.await(drain.toMillis(), TimeUnit.MILLISECONDS) ? 0 : done.getCount();
    double seconds = (System.nanoTime() - start) / 1e9;
    // the latch's countDown/await orders each answered call's writes before these reads; a call
    // still open may be seen either way, and is counted as an error above
    int count = 0;
    for (boolean a : answered) {
      count += a ? 1 : 0;
    }
    double[] ok = new double[count];
    long[] planned = new long[count];
    double[] lag = new double[count];
    for (int i = 0, j = 0; i < n && j < count; i++) {
      if (answered[i]) {
        planned[j] = startEpochMs + i * periodNs / 1_000_000;
        lag[j] = sendLag[i];
        ok[j++] = latencies[i];
      }
    }
    return new Result(ok, errors.get() + open, seconds, rate, planned, lag);
  }

  /** The {@code p}-th percentile (0-100) of {@code values}, nearest rank; NaN when empty. */
  static double percentile(double[] values, double p) {
    if (values.length == 0) {
      return Double.NaN;
    }
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int rank = (int) Math.ceil(p / 100 * sorted.length);
    return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
  }
}
