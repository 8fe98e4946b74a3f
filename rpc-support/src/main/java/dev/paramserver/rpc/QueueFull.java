package dev.paramserver.rpc;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;

/**
 * Thrown by a bounded executor whose queue is full (not stopped): the work was refused before it
 * began, and the call is answered OVERLOADED with a retry hint ({@link Offload#refusalOf}).
 */
public final class QueueFull extends RejectedExecutionException {
  private static final long serialVersionUID = 1L;

  private final transient ServiceException refusal;

  /**
   * @param what the executor, for the message, for example "the pserver's blocking executor"
   * @param property the property that sets the queue's capacity
   */
  public QueueFull(String what, int capacity, String property, Duration retryAfter) {
    super(what + " has " + capacity + " calls queued");
    this.refusal =
        new ServiceException(
            ErrorReason.OVERLOADED,
            what + " has " + capacity + " calls queued (" + property + "): retry after the hint",
            RpcErrors.overloadedMetadata("queue", retryAfter));
  }

  /** The OVERLOADED refusal to answer the call with. */
  public ServiceException refusal() {
    return refusal;
  }
}
