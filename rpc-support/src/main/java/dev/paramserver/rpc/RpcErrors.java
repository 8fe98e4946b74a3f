package dev.paramserver.rpc;

import static io.grpc.Status.fromThrowable;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import com.google.rpc.Status;
import dev.paramserver.proto.v1.ErrorReason;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.nio.channels.ClosedChannelException;

/**
 * The one mapping from {@link ErrorReason} to gRPC status codes, and the way to read a reason back
 * from a failed call. The reason travels as a {@code google.rpc.ErrorInfo} detail with domain
 * {@value #DOMAIN}.
 */
public final class RpcErrors {
  public static final String DOMAIN = "paramserver.dev";

  private RpcErrors() {}

  /** The status code a reason is reported with. */
  public static Code codeFor(ErrorReason reason) {
    return switch (reason) {
      case NOT_INITIALIZED,
          NOT_LEADER,
          NOT_PRIMARY,
          DATASET_CONFLICT,
          NO_DATASET,
          NOT_JOINED,
          MODEL_MISMATCH,
          NO_MODEL ->
          Code.FAILED_PRECONDITION;
      case UNKNOWN_PARAMETER, UNKNOWN_TASK -> Code.NOT_FOUND;
      case SHAPE_MISMATCH,
          UNSUPPORTED_DTYPE,
          NON_FINITE_GRADIENT,
          DATASET_UNREADABLE,
          BAD_ARGUMENT,
          BAD_OPTIMIZER ->
          Code.INVALID_ARGUMENT;
      case INIT_CONFLICT, TRAINER_ID_TAKEN -> Code.ALREADY_EXISTS;
      case SHUTTING_DOWN -> Code.UNAVAILABLE;
      case TOO_LARGE -> Code.RESOURCE_EXHAUSTED;
      case SYNC_ABORTED -> Code.ABORTED;
      case PUSH_WINDOW_EXCEEDED -> Code.OUT_OF_RANGE;
      case ERROR_REASON_UNSPECIFIED, UNRECOGNIZED -> Code.UNKNOWN;
    };
  }

  /** A status exception carrying the reason as an ErrorInfo detail. */
  public static StatusRuntimeException toStatus(ErrorReason reason, String message) {
    Status status =
        Status.newBuilder()
            .setCode(codeFor(reason).value())
            .setMessage(message == null ? reason.name() : message)
            .addDetails(
                Any.pack(ErrorInfo.newBuilder().setReason(reason.name()).setDomain(DOMAIN).build()))
            .build();
    return StatusProto.toStatusRuntimeException(status);
  }

  public static StatusRuntimeException toStatus(ServiceException e) {
    return toStatus(e.reason(), e.getMessage());
  }

  /** The reason a failed call carried, or ERROR_REASON_UNSPECIFIED when it carried none. */
  public static ErrorReason reasonOf(Throwable t) {
    Status status = StatusProto.fromThrowable(t);
    if (status == null) {
      return ErrorReason.ERROR_REASON_UNSPECIFIED;
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        try {
          ErrorInfo info = detail.unpack(ErrorInfo.class);
          if (DOMAIN.equals(info.getDomain())) {
            return ErrorReason.valueOf(info.getReason());
          }
        } catch (InvalidProtocolBufferException | IllegalArgumentException e) {
          return ErrorReason.ERROR_REASON_UNSPECIFIED;
        }
      }
    }
    return ErrorReason.ERROR_REASON_UNSPECIFIED;
  }

  /** The status code of a failed call (UNKNOWN for a non-gRPC exception). */
  public static Code codeOf(Throwable t) {
    return fromThrowable(t).getCode();
  }

  /** True for failures worth retrying after re-resolving the peer (it was unreachable or busy). */
  public static boolean isTransient(Throwable t) {
    Code code = codeOf(t);
    return code == Code.UNAVAILABLE
        || code == Code.DEADLINE_EXCEEDED
        || code == Code.CANCELLED && !Thread.currentThread().isInterrupted()
        || code == Code.UNKNOWN && closedConnection(t);
  }

  /**
   * grpc-java's Netty transport reports a connection closed under a call (the server killed while a
   * request was written) as UNKNOWN "channel closed" with a {@link ClosedChannelException} cause,
   * not as UNAVAILABLE (grpc-java issues 7376, 10120): it is the same failure.
   */
  private static boolean closedConnection(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof ClosedChannelException) {
        return true;
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return false;
  }
}
