package dev.paramserver.rpc;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Bounded exponential backoff with jitter: 100 ms, 200 ms, 400 ms ... up to {@code max}. Call
 * {@link #reset()} after a success. Never spins: every failed attempt waits.
 */
public final class Backoff {
  private final long initialMs;
  private final long maxMs;
  private int attempt;

  public Backoff(Duration initial, Duration max) {
    this.initialMs = Math.max(1, initial.toMillis());
    this.maxMs = Math.max(initialMs, max.toMillis());
  }

  public static Backoff upTo(Duration max) {
    return new Backoff(Duration.ofMillis(100), max);
  }

  /** Attempts failed since the last reset. */
  public int attempts() {
    return attempt;
  }

  /** The next wait, with up to 20% jitter. */
  public long nextDelayMs() {
    long capped = nextBaseDelayMs();
    return capped - ThreadLocalRandom.current().nextLong(capped / 5 + 1);
  }

  /** The next wait without jitter (a caller that jitters, or must not, itself). */
  public long nextBaseDelayMs() {
    long base = initialMs << Math.min(attempt, 20);
    attempt++;
    return Math.min(maxMs, base);
  }

  /** Sleeps for the next wait. */
  public void pause() throws InterruptedException {
    Thread.sleep(nextDelayMs());
  }

  public void reset() {
    attempt = 0;
  }
}
