package dev.paramserver.rpc;

/**
 * The caller is stopping: a call that was waiting or retrying gives up. The one way a stop request
 * travels up through code that waits (retry loops, futures, pauses).
 */
public final class StoppedException extends RuntimeException {
  public StoppedException(String what) {
    super("stopping; gave up " + what);
  }
}
