package dev.paramserver.master.web;

/**
 * Thrown by an endpoint that only the leader master serves, on a standby: {@link NotLeaderAdvice}
 * answers it.
 */
final class NotLeaderException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  NotLeaderException() {
    super("not the leader", null, false, false);
  }
}
