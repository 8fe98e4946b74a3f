package dev.paramserver.storage;

import java.io.IOException;

/**
 * A file or object could not be read, listed or written. The message names the location (the {@code
 * s3://} URI or path) and says what to check: a missing object or bucket, refused or missing
 * credentials, an unreachable endpoint.
 */
public class StorageException extends IOException {
  private static final long serialVersionUID = 1L;

  /** What went wrong, for callers that act on it (a missing object is not an outage). */
  public enum Kind {
    NOT_FOUND,
    ACCESS_DENIED,
    NO_CREDENTIALS,
    UNREACHABLE,
    OTHER
  }

  private final Kind kind;

  public StorageException(Kind kind, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind;
  }

  public Kind kind() {
    return kind;
  }
}
