package dev.paramserver.master.grpc;

import dev.paramserver.master.console.PserverStatuses;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.springframework.stereotype.Component;

/**
 * {@link PserverStatuses} over gRPC: one channel per pserver address, from the injected {@link
 * ChannelFactory}, kept between samples and closed when the address is no longer registered ({@link
 * #retainOnly}) or at {@link #close}.
 */
@Component
final class GrpcPserverStatuses implements PserverStatuses {
  private final ChannelFactory channels;
  // guarded by this
  private final Map<String, ManagedChannel> open = new HashMap<>();

  GrpcPserverStatuses(ChannelFactory channels) {
    this.channels = channels;
  }

  @Override
  public ShardStatus status(String grpcAddress, Duration timeout) {
    ManagedChannel channel;
    synchronized (this) {
      channel = open.computeIfAbsent(grpcAddress, channels::forAddress);
    }
    try {
      return ParameterServerGrpc.newBlockingStub(channel)
          .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
          .getShardStatus(GetShardStatusRequest.getDefaultInstance());
    } catch (StatusRuntimeException e) {
      throw GrpcPserverCalls.failure(e);
    }
  }

  @Override
  public synchronized void retainOnly(Collection<String> grpcAddresses) {
    open.entrySet()
        .removeIf(
            e -> {
              if (grpcAddresses.contains(e.getKey())) {
                return false;
              }
              e.getValue().shutdownNow();
              return true;
            });
  }

  @Override
  public synchronized void close() {
    open.values().forEach(ManagedChannel::shutdownNow);
    open.clear();
  }
}
