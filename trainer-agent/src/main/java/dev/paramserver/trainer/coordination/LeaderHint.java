package dev.paramserver.trainer.coordination;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.protobuf.StatusProto;

/**
 * The leader's address a standby master names when it answers NOT_LEADER: the ErrorInfo metadata
 * key {@code leader} (coordination.proto).
 */
public final class LeaderHint {
  /** The ErrorInfo metadata key that carries the leader's address. */
  public static final String KEY = "leader";

  private LeaderHint() {}

  /** The leader's address in {@code t}'s ErrorInfo, or null when it names none. */
  public static String of(Throwable t) {
    com.google.rpc.Status status = StatusProto.fromThrowable(t);
    if (status == null) {
      return null;
    }
    for (Any detail : status.getDetailsList()) {
      if (!detail.is(ErrorInfo.class)) {
        continue;
      }
      try {
        ErrorInfo info = detail.unpack(ErrorInfo.class);
        String leader = info.getMetadataOrDefault(KEY, "");
        if (RpcErrors.DOMAIN.equals(info.getDomain()) && !leader.isBlank()) {
          return leader;
        }
      } catch (InvalidProtocolBufferException e) {
        return null;
      }
    }
    return null;
  }
}
