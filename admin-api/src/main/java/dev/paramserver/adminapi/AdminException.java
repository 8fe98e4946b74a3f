package dev.paramserver.adminapi;

import java.io.IOException;

/** A call of {@link AdminClient} that failed; {@link #kind()} says how. */
public final class AdminException extends IOException {
  private static final long serialVersionUID = 1L;

  /** How a call failed. */
  public enum Kind {
    /** No connection, or no answer within the timeout: the service is down or unreachable. */
    UNREACHABLE,
    /** 401: the admin token is missing or wrong. */
    UNAUTHORIZED,
    /** Another non-2xx answer, or an answer that is not the JSON expected. */
    BAD_ANSWER
  }

  private final Kind kind;

  AdminException(Kind kind, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind;
  }

  public Kind kind() {
    return kind;
  }
}
