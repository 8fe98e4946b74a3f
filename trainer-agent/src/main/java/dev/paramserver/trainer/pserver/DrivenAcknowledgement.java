package dev.paramserver.trainer.pserver;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A push's acknowledgement for a thread other than the training thread ({@link
 * StreamedPushes#acknowledgement}): one that waits for it drives the streams meanwhile, one look at
 * a time ({@code look}), and waits for the acknowledgement outside the streams' monitor between
 * looks (it completes on gRPC's thread), so that the training thread is never kept out for longer
 * than a look.
 */
final class DrivenAcknowledgement implements Future<Void> {
  private final Runnable look;
  private final CompletableFuture<Void> ack;
  private final long tickMs;

  DrivenAcknowledgement(Runnable look, CompletableFuture<Void> ack, long tickMs) {
    this.look = look;
    this.ack = ack;
    this.tickMs = tickMs;
  }

  @Override
  public boolean cancel(boolean mayInterrupt) {
    return false;
  }

  @Override
  public boolean isCancelled() {
    return false;
  }

  @Override
  public boolean isDone() {
    return ack.isDone();
  }

  @Override
  public Void get() throws InterruptedException, ExecutionException {
    while (!ack.isDone()) {
      driveOnce();
    }
    return ack.get();
  }

  @Override
  public Void get(long timeout, TimeUnit unit)
      throws InterruptedException, ExecutionException, TimeoutException {
    long end = System.nanoTime() + unit.toNanos(timeout);
    while (!ack.isDone()) {
      if (System.nanoTime() - end >= 0) {
        throw new TimeoutException("the push was not acknowledged within " + timeout + " " + unit);
      }
      driveOnce();
    }
    return ack.get();
  }

  private void driveOnce() throws InterruptedException {
    look.run();
    try {
      ack.get(tickMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // not yet, or failed: the caller looks at the future again
    }
  }
}
