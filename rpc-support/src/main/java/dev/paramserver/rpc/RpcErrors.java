package dev.paramserver.rpc;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import dev.paramserver.proto.v1.ErrorReason;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;

/**
 * The one mapping from {@link ErrorReason} to gRPC status codes, and the way to read a reason back
 * from a failed call. The reason travels as a {@code google.rpc.ErrorInfo} detail with domain
 * {@value #DOMAIN}.
 */
public final class RpcErrors {
  public static final String DOMAIN = "paramserver.dev";

  private RpcErrors() {}

  /** The status code a reason is reported with. */
  public static Status.Code codeFor(ErrorReason reason) {
    return switch (reason) {
      case NOT_INITIALIZED, NOT_LEADER, DATASET_CONFLICT, NO_DATASET ->
          Status.Code.FAILED_PRECONDITION;
      case UNKNOWN_PARAMETER, UNKNOWN_TASK -> Status.Code.NOT_FOUND;
      case SHAPE_MISMATCH,
          UNSUPPORTED_DTYPE,
          NON_FINITE_GRADIENT,
          DATASET_UNREADABLE,
          BAD_ARGUMENT,
          BAD_OPTIMIZER ->
          Status.Code.INVALID_ARGUMENT;
      case INIT_CONFLICT -> Status.Code.ALREADY_EXISTS;
      case SHUTTING_DOWN -> Status.Code.UNAVAILABLE;
      case TOO_LARGE -> Status.Code.RESOURCE_EXHAUSTED;
      case SYNC_ABORTED -> Status.Code.ABORTED;
      case ERROR_REASON_UNSPECIFIED, UNRECOGNIZED -> Status.Code.UNKNOWN;
    };
  }

  /** A status exception carrying the reason as an ErrorInfo detail. */
  public static StatusRuntimeException toStatus(ErrorReason reason, String message) {
    com.google.rpc.Status status =
        com.google.rpc.Status.newBuilder()
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
    com.google.rpc.Status status = StatusProto.fromThrowable(t);
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
        } catch (com.google.protobuf.InvalidProtocolBufferException | IllegalArgumentException e) {
          return ErrorReason.ERROR_REASON_UNSPECIFIED;
        }
      }
    }
    return ErrorReason.ERROR_REASON_UNSPECIFIED;
  }

  /** The status code of a failed call (UNKNOWN for a non-gRPC exception). */
  public static Status.Code codeOf(Throwable t) {
    return Status.fromThrowable(t).getCode();
  }

  /** True for failures worth retrying after re-resolving the peer (it was unreachable or busy). */
  public static boolean isTransient(Throwable t) {
    Status.Code code = codeOf(t);
    return code == Status.Code.UNAVAILABLE
        || code == Status.Code.DEADLINE_EXCEEDED
        || code == Status.Code.CANCELLED && !Thread.currentThread().isInterrupted();
  }
}
