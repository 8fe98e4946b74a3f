package dev.paramserver.localcluster;

/** A local cluster could not do what was asked; the message says which process and why. */
public class LocalClusterException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public LocalClusterException(String message) {
    super(message);
  }

  public LocalClusterException(String message, Throwable cause) {
    super(message, cause);
  }
}
