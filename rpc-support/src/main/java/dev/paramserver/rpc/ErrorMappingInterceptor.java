package dev.paramserver.rpc;

import dev.paramserver.errors.ServiceException;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Maps exceptions thrown by service handlers to statuses in one place: {@link ServiceException} to
 * its reason's code, {@link IllegalArgumentException} to INVALID_ARGUMENT, anything else to
 * INTERNAL with a generic message (the stack trace is logged here, never sent to the client).
 */
public final class ErrorMappingInterceptor implements ServerInterceptor {
  private static final Logger log = LoggerFactory.getLogger(ErrorMappingInterceptor.class);

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    ServerCall.Listener<Q> delegate = next.startCall(call, headers);
    return new SimpleForwardingServerCallListener<>(delegate) {
      @Override
      public void onMessage(Q message) {
        try {
          super.onMessage(message);
        } catch (RuntimeException e) {
          close(call, e);
        }
      }

      @Override
      public void onHalfClose() {
        try {
          super.onHalfClose();
        } catch (RuntimeException e) {
          close(call, e);
        }
      }
    };
  }

  private static <Q, R> void close(ServerCall<Q, R> call, RuntimeException e) {
    StatusRuntimeException status = map(call.getMethodDescriptor().getFullMethodName(), e);
    Metadata trailers = status.getTrailers() == null ? new Metadata() : status.getTrailers();
    try {
      call.close(status.getStatus(), trailers);
    } catch (IllegalStateException alreadyClosed) {
      log.debug("call {} already closed", call.getMethodDescriptor().getFullMethodName());
    }
  }

  /** The status a handler exception is reported with. */
  public static StatusRuntimeException map(String method, RuntimeException e) {
    if (e instanceof ServiceException se) {
      return RpcErrors.toStatus(se);
    }
    if (e instanceof StatusRuntimeException sre) {
      return sre;
    }
    if (e instanceof IllegalArgumentException) {
      return Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException();
    }
    log.error("{} failed", method, e);
    return Status.INTERNAL
        .withDescription("internal error in " + method + "; see the server log")
        .asRuntimeException();
  }
}
