package dev.paramserver.psctl.command;

import java.io.IOException;

/**
 * The master, or the etcd that names it, cannot be reached: psctl exits {@link
 * ExitCodes#UNREACHABLE}.
 */
public final class UnreachableException extends IOException {
  private static final long serialVersionUID = 1L;

  public UnreachableException(String message, Throwable cause) {
    super(message, cause);
  }
}
