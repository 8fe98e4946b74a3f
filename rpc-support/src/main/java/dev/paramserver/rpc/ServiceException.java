package dev.paramserver.rpc;

import dev.paramserver.proto.v1.ErrorReason;

/**
 * A domain error with a machine-readable reason. Domain classes throw it without knowing about
 * gRPC; {@link ErrorMappingInterceptor} turns it into the status code that {@link RpcErrors}
 * assigns to the reason. The message goes to the client as is: it names the thing and what to do.
 */
public class ServiceException extends RuntimeException {
  private final ErrorReason reason;

  public ServiceException(ErrorReason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public ServiceException(ErrorReason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  public ErrorReason reason() {
    return reason;
  }
}
