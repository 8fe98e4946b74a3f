package dev.paramserver.pserver.shard;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts of the pushes and pulls a shard served and the apply times of the recent pushes, for the
 * status the master's console shows (rates come from the counts' differences over time; the p99
 * from the last {@value #WINDOW} pushes). Thread-safe; recording is lock-free.
 */
public final class ShardTraffic {
  static final int WINDOW = 1024;

  private final AtomicLong pushes = new AtomicLong();
  private final AtomicLong pulls = new AtomicLong();
  private final long[] applyNanos = new long[WINDOW];

  /** Records one push applied (or refused) after {@code nanos}. */
  public void push(long nanos) {
    long n = pushes.getAndIncrement();
    applyNanos[(int) (n % WINDOW)] = nanos;
  }

  public void pull() {
    pulls.incrementAndGet();
  }

  public long pushes() {
    return pushes.get();
  }

  public long pulls() {
    return pulls.get();
  }

  /** The 99th percentile of the recent pushes' apply times in milliseconds, NaN before any push. */
  public double applyP99Millis() {
    int n = (int) Math.min(pushes.get(), WINDOW);
    if (n == 0) {
      return Double.NaN;
    }
    long[] copy = Arrays.copyOf(applyNanos, n);
    Arrays.sort(copy);
    int rank = (int) Math.ceil(0.99 * n) - 1;
    return copy[Math.max(0, rank)] / 1e6;
  }
}
