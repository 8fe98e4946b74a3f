package dev.paramserver.trainer.stop;

import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.springframework.stereotype.Component;

/**
 * The trainer's one way of saying "stop": once {@link #request() requested}, every wait, pause and
 * retry loop of the trainer gives up by throwing {@link StoppedException} (as does an interrupt),
 * and the training session hands its task back and ends.
 */
@Component
public final class StopSignal implements BooleanSupplier {
  private final AtomicBoolean requested = new AtomicBoolean();

  /** Asks everything that waits to give up. */
  public void request() {
    requested.set(true);
  }

  public boolean isRequested() {
    return requested.get();
  }

  @Override
  public boolean getAsBoolean() {
    return requested.get();
  }

  /** Throws {@link StoppedException} if a stop was requested. */
  public void check(String what) {
    if (requested.get()) {
      throw new StoppedException(what);
    }
  }

  /** A retry loop that gives up when a stop is requested. */
  public Retry retry(Duration initial, Duration max) {
    return new Retry(initial, max, this);
  }

  /** A retry loop waiting from 100 ms up to {@code max}, giving up when a stop is requested. */
  public Retry retryUpTo(Duration max) {
    return Retry.upTo(max, this);
  }

  /** Sleeps; an interrupt becomes {@link StoppedException}. */
  public void pause(long millis, String what) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoppedException(what);
    }
  }

  /**
   * Waits for a future; an interrupt becomes {@link StoppedException}, a failure is rethrown as it
   * is when unchecked.
   */
  public <T> T await(Future<T> future, String what) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoppedException(what);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(what + " failed", e.getCause());
    }
  }
}
