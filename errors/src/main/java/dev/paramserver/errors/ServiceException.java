package dev.paramserver.errors;

import java.util.Map;

/**
 * A domain error with a machine-readable reason. Domain classes throw it without knowing about
 * gRPC; rpc-support's {@code ErrorMappingInterceptor} turns it into the status code that its {@code
 * RpcErrors} assigns to the reason. The message goes to the client as is: it names the thing and
 * what to do.
 */
public class ServiceException extends RuntimeException {
  private final ErrorReason reason;
  private final Map<String, String> metadata;

  public ServiceException(ErrorReason reason, String message) {
    this(reason, message, Map.of());
  }

  public ServiceException(ErrorReason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
    this.metadata = Map.of();
  }

  /**
   * @param metadata sent in the ErrorInfo's metadata, for clients to act on (for example {@code
   *     leader}: the leader master's address, on NOT_LEADER)
   */
  public ServiceException(ErrorReason reason, String message, Map<String, String> metadata) {
    super(message);
    this.reason = reason;
    this.metadata = Map.copyOf(metadata);
  }

  public ErrorReason reason() {
    return reason;
  }

  /** The ErrorInfo metadata sent with the reason (often empty). */
  public Map<String, String> metadata() {
    return metadata;
  }
}
