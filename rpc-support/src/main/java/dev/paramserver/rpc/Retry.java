package dev.paramserver.rpc;

import java.time.Duration;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * The one retry loop of the project: runs an attempt until it yields a result, waiting a bounded
 * exponential {@link Backoff} between attempts, and gives up only when its stop condition turns
 * true or the thread is interrupted (then it throws {@link StoppedException}, with the interrupt
 * flag restored). What counts as a retryable failure is the attempt's business: it catches those
 * and returns empty; anything it throws ends the loop.
 *
 * <p>Only calls that are safe to repeat belong in a retry loop.
 */
public final class Retry {
  private final Duration initial;
  private final Duration max;
  private final BooleanSupplier stopping;
  private final Pause pause;

  /** How the loop waits between attempts, when not {@link Backoff#pause}. */
  @FunctionalInterface
  public interface Pause {
    /** Waits {@code millis} (the backoff's wait, without jitter). */
    void sleep(long millis) throws InterruptedException;
  }

  /**
   * @param initial the first wait
   * @param max the longest wait
   * @param stopping true once the caller stops: the loop then gives up before the next attempt
   */
  public Retry(Duration initial, Duration max, BooleanSupplier stopping) {
    if (initial.isNegative() || initial.isZero() || max.compareTo(initial) < 0) {
      throw new IllegalArgumentException(
          "retry waits must be positive with initial <= max, got " + initial + " and " + max);
    }
    this.initial = initial;
    this.max = max;
    this.stopping = stopping;
    this.pause = null;
  }

  private Retry(Duration initial, Duration max, BooleanSupplier stopping, Pause pause) {
    this.initial = initial;
    this.max = max;
    this.stopping = stopping;
    this.pause = pause;
  }

  /**
   * This loop, waiting between attempts with {@code pause} (a simulated clock's) instead of {@link
   * Thread#sleep}.
   */
  public Retry pausing(Pause pause) {
    return new Retry(initial, max, stopping, pause);
  }

  /** Waits starting at 100 ms, doubling up to {@code max}. */
  public static Retry upTo(Duration max, BooleanSupplier stopping) {
    return new Retry(Duration.ofMillis(Math.min(100, max.toMillis())), max, stopping);
  }

  /** The longest wait between attempts. */
  public Duration max() {
    return max;
  }

  /** One attempt of a retried operation. */
  @FunctionalInterface
  public interface Attempt<T> {
    /**
     * @param attempt 1 for the first attempt, 2 for the second...
     * @return the result, or empty to wait and try again
     */
    Optional<T> run(int attempt) throws InterruptedException;
  }

  /**
   * Runs {@code attempt} until it returns a result.
   *
   * @param what what is being done, for the message of {@link StoppedException}
   * @throws StoppedException when the stop condition holds or the thread is interrupted
   */
  public <T> T until(String what, Attempt<T> attempt) {
    Backoff backoff = new Backoff(initial, max);
    while (true) {
      if (stopping.getAsBoolean()) {
        throw new StoppedException(what);
      }
      try {
        Optional<T> result = attempt.run(backoff.attempts() + 1);
        if (result.isPresent()) {
          return result.get();
        }
        if (stopping.getAsBoolean()) {
          throw new StoppedException(what);
        }
        if (pause == null) {
          backoff.pause();
        } else {
          pause.sleep(backoff.nextBaseDelayMs());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StoppedException(what);
      }
    }
  }
}
