package dev.paramserver.etcd;

/** A coordination call failed: etcd unreachable, timed out, or refused the request. */
public class CoordinationException extends RuntimeException {
  public CoordinationException(String message, Throwable cause) {
    super(message, cause);
  }

  public CoordinationException(String message) {
    super(message);
  }
}
