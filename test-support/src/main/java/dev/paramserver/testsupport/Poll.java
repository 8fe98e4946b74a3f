package dev.paramserver.testsupport;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waits for a condition with a deadline instead of a fixed sleep. */
public final class Poll {
  private Poll() {}

  /**
   * Evaluates {@code condition} every {@code interval} until it is true.
   *
   * @throws AssertionError naming {@code what} if {@code timeout} passes first (or the thread is
   *     interrupted; the interrupt flag is restored)
   */
  public static void until(
      Duration timeout, Duration interval, BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      if (condition.getAsBoolean()) {
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError("timed out after " + timeout + " waiting for " + what);
      }
      try {
        Thread.sleep(Math.max(1, Math.min(interval.toMillis(), left / 1_000_000)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for " + what, e);
      }
    }
  }

  /** {@link #until(Duration, Duration, BooleanSupplier, String)} polling every 50 ms. */
  public static void until(Duration timeout, BooleanSupplier condition, String what) {
    until(timeout, Duration.ofMillis(50), condition, what);
  }
}
