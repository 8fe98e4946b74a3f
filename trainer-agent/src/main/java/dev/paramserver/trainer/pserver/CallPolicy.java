package dev.paramserver.trainer.pserver;

import dev.paramserver.rpc.Backoff;
import dev.paramserver.rpc.Retry;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * How the trainer calls pservers: the deadline of each call and the retry loops of calls that are
 * safe to repeat (they give up when {@code stopping} turns true).
 *
 * @param timeout the deadline of each call
 * @param maxBackoff the longest wait between two attempts
 * @param stopping true once the trainer stops
 */
public record CallPolicy(Duration timeout, Duration maxBackoff, BooleanSupplier stopping) {
  /** Waits from 100 ms doubling up to {@link #maxBackoff}. */
  public Retry retry() {
    return Retry.upTo(maxBackoff, stopping);
  }

  /**
   * The waits of {@link #retry()} for a loop the caller runs itself (for example the training
   * thread's, between the attempts of a push stream).
   */
  public Backoff backoff() {
    return new Backoff(Duration.ofMillis(Math.min(100, maxBackoff.toMillis())), maxBackoff);
  }

  /** Waits from {@code initial} doubling up to {@code max}. */
  public Retry retry(Duration initial, Duration max) {
    return new Retry(initial, max, stopping);
  }
}
