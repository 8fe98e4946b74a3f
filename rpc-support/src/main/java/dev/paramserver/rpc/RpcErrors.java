package dev.paramserver.rpc;

import static io.grpc.Status.fromThrowable;

import com.google.protobuf.Any;
import com.google.protobuf.Duration;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import com.google.rpc.Status;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.nio.channels.ClosedChannelException;
import java.util.Map;
import java.util.Optional;

/**
 * The one mapping from {@link ErrorReason} (the errors module's, which domain code throws in a
 * {@link ServiceException}) to gRPC status codes and {@code google.rpc} details, and the way to
 * read a reason back from a failed call. The reason travels as a {@code google.rpc.ErrorInfo}
 * detail with domain {@value #DOMAIN}.
 */
public final class RpcErrors {
  public static final String DOMAIN = "paramserver.dev";

  /** ErrorInfo metadata of OVERLOADED: the retry hint in milliseconds. */
  public static final String RETRY_AFTER_MS = "retry_after_ms";

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
          NO_MODEL,
          WRONG_SHARD,
          MOVED ->
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
      case SHUTTING_DOWN, VERSION_NOT_REACHED -> Code.UNAVAILABLE;
      case TOO_LARGE, OVERLOADED, FOLLOWER_TOO_SLOW -> Code.RESOURCE_EXHAUSTED;
      case SYNC_ABORTED -> Code.ABORTED;
      case PUSH_WINDOW_EXCEEDED -> Code.OUT_OF_RANGE;
      case ERROR_REASON_UNSPECIFIED -> Code.UNKNOWN;
    };
  }

  /** The proto enum's value of {@code reason} (same number). */
  public static dev.paramserver.proto.v1.ErrorReason toProto(ErrorReason reason) {
    return dev.paramserver.proto.v1.ErrorReason.forNumber(reason.number());
  }

  /**
   * The Java reason of a proto enum value (same number); ERROR_REASON_UNSPECIFIED for UNRECOGNIZED.
   */
  public static ErrorReason fromProto(dev.paramserver.proto.v1.ErrorReason reason) {
    return reason == dev.paramserver.proto.v1.ErrorReason.UNRECOGNIZED
        ? ErrorReason.ERROR_REASON_UNSPECIFIED
        : ErrorReason.forNumber(reason.getNumber());
  }

  /** A status exception carrying the reason as an ErrorInfo detail. */
  public static StatusRuntimeException toStatus(ErrorReason reason, String message) {
    return toStatus(reason, message, Map.of());
  }

  /**
   * A status exception carrying the reason, and {@code metadata} (for example {@code leader} on
   * NOT_LEADER), as an ErrorInfo detail.
   */
  public static StatusRuntimeException toStatus(
      ErrorReason reason, String message, Map<String, String> metadata) {
    return toStatus(codeFor(reason), reason, message, metadata);
  }

  /**
   * Like {@link #toStatus(ErrorReason, String, Map)} with another code than the reason's own: for
   * example UNAVAILABLE with NOT_LEADER when a stream ends because the master stepped down (the
   * client reconnects to the leader).
   */
  public static StatusRuntimeException toStatus(
      Code code, ErrorReason reason, String message, Map<String, String> metadata) {
    Status.Builder status =
        Status.newBuilder()
            .setCode(code.value())
            .setMessage(message == null ? reason.name() : message)
            .addDetails(
                Any.pack(
                    ErrorInfo.newBuilder()
                        .setReason(reason.name())
                        .setDomain(DOMAIN)
                        .putAllMetadata(metadata)
                        .build()));
    String retryAfterMs = metadata.get(RETRY_AFTER_MS);
    if (reason == ErrorReason.OVERLOADED && retryAfterMs != null) {
      // the standard hint too, for stock clients (google.rpc.RetryInfo)
      long ms = Long.parseLong(retryAfterMs);
      status.addDetails(
          Any.pack(
              RetryInfo.newBuilder()
                  .setRetryDelay(
                      Duration.newBuilder()
                          .setSeconds(ms / 1000)
                          .setNanos((int) (ms % 1000) * 1_000_000))
                  .build()));
    }
    return StatusProto.toStatusRuntimeException(status.build());
  }

  /**
   * OVERLOADED (RESOURCE_EXHAUSTED): the server is at {@code limit} and did nothing; the client
   * retries the same request after {@code retryAfter}, given both as a {@code google.rpc.RetryInfo}
   * detail and as ErrorInfo metadata {@code retry_after_ms} (with {@code limit}).
   */
  public static StatusRuntimeException overloaded(
      String limit, String message, java.time.Duration retryAfter) {
    return toStatus(ErrorReason.OVERLOADED, message, overloadedMetadata(limit, retryAfter));
  }

  /** The ErrorInfo metadata of an OVERLOADED refusal: {@code limit} and {@code retry_after_ms}. */
  public static Map<String, String> overloadedMetadata(
      String limit, java.time.Duration retryAfter) {
    return Map.of(
        "limit", limit, RETRY_AFTER_MS, Long.toString(Math.max(1, retryAfter.toMillis())));
  }

  /**
   * The retry hint of a failed call: its {@code google.rpc.RetryInfo} delay, or empty when it
   * carried none.
   */
  public static Optional<java.time.Duration> retryAfterOf(Throwable t) {
    Status status = StatusProto.fromThrowable(t);
    if (status == null) {
      return Optional.empty();
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(RetryInfo.class)) {
        try {
          Duration d = detail.unpack(RetryInfo.class).getRetryDelay();
          return Optional.of(java.time.Duration.ofSeconds(d.getSeconds(), d.getNanos()));
        } catch (InvalidProtocolBufferException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }

  public static StatusRuntimeException toStatus(ServiceException e) {
    return toStatus(e.reason(), e.getMessage(), e.metadata());
  }

  /** The reason a failed call carried, or ERROR_REASON_UNSPECIFIED when it carried none. */
  public static ErrorReason reasonOf(Throwable t) {
    return errorInfoOf(t)
        .map(info -> ErrorReason.ofName(info.getReason()))
        .orElse(ErrorReason.ERROR_REASON_UNSPECIFIED);
  }

  /**
   * The ErrorInfo metadata a failed call carried (for example {@code leader}, the leader master's
   * address, on NOT_LEADER); empty when it carried none.
   */
  public static Map<String, String> metadataOf(Throwable t) {
    return errorInfoOf(t).map(ErrorInfo::getMetadataMap).orElse(Map.of());
  }

  private static Optional<ErrorInfo> errorInfoOf(Throwable t) {
    Status status = StatusProto.fromThrowable(t);
    if (status == null) {
      return Optional.empty();
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        try {
          ErrorInfo info = detail.unpack(ErrorInfo.class);
          if (DOMAIN.equals(info.getDomain())) {
            return Optional.of(info);
          }
        } catch (InvalidProtocolBufferException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }

  /** The status code of a failed call (UNKNOWN for a non-gRPC exception). */
  public static Code codeOf(Throwable t) {
    return fromThrowable(t).getCode();
  }

  /**
   * True for failures worth retrying after re-resolving the peer (it was unreachable or busy),
   * OVERLOADED included (a refusal at a server limit: nothing was done).
   */
  public static boolean isTransient(Throwable t) {
    Code code = codeOf(t);
    return code == Code.UNAVAILABLE
        || code == Code.RESOURCE_EXHAUSTED && reasonOf(t) == ErrorReason.OVERLOADED
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
