package dev.paramserver.master.grpc;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.master.placement.PserverCalls;
import dev.paramserver.master.placement.PserverUnreachableException;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.springframework.stereotype.Component;

/**
 * {@link PserverCalls} over gRPC: one channel per call, from the injected {@link ChannelFactory},
 * closed when the call ends (the calls are rare: a scaling's checks and moves).
 */
@Component
final class GrpcPserverCalls implements PserverCalls {
  private final ChannelFactory channels;

  GrpcPserverCalls(ChannelFactory channels) {
    this.channels = channels;
  }

  @Override
  public ShardStatus status(String address, Duration timeout) {
    ManagedChannel channel = channels.forAddress(address);
    try {
      return ParameterServerGrpc.newBlockingStub(channel)
          .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
          .getShardStatus(GetShardStatusRequest.getDefaultInstance());
    } catch (StatusRuntimeException e) {
      throw failure(e);
    } finally {
      channel.shutdownNow();
    }
  }

  @Override
  public MoveOutResponse moveOut(String address, SlotMove move, Duration timeout) {
    ManagedChannel channel = channels.forAddress(address);
    try {
      return SlotMovesGrpc.newBlockingStub(channel)
          .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
          .moveOut(move);
    } catch (StatusRuntimeException e) {
      throw failure(e);
    } finally {
      channel.shutdownNow();
    }
  }

  /**
   * A failed call to a pserver as the domain sees it: the reason it carried, the status as the
   * message (as before: "UNAVAILABLE: io exception"), and {@link PserverUnreachableException} when
   * the pserver did not answer ({@link RpcErrors#isTransient}).
   */
  static ServiceException failure(StatusRuntimeException e) {
    String message = e.getMessage() == null ? e.getStatus().getCode().name() : e.getMessage();
    return RpcErrors.isTransient(e)
        ? new PserverUnreachableException(RpcErrors.reasonOf(e), message, e)
        : new ServiceException(RpcErrors.reasonOf(e), message, e);
  }
}
