package dev.paramserver.launcher;

/** A child process could not be started or did not become ready; the message says why. */
public class LaunchException extends RuntimeException {
  public LaunchException(String message, Throwable cause) {
    super(message, cause);
  }

  public LaunchException(String message) {
    super(message);
  }
}
