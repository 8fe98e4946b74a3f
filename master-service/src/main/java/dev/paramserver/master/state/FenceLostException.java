package dev.paramserver.master.state;

/**
 * A fenced write was refused because this master no longer holds the leadership, or could not be
 * confirmed (etcd unreachable). The master must stop serving and campaign again.
 */
public final class FenceLostException extends RuntimeException {
  public FenceLostException(String message) {
    super(message);
  }

  public FenceLostException(String message, Throwable cause) {
    super(message, cause);
  }
}
