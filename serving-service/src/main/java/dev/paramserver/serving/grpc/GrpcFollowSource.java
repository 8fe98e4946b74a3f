package dev.paramserver.serving.grpc;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;
import dev.paramserver.proto.v1.ShardFollowGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.serving.replica.FollowSource;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Follows a shard at the pserver registered under {@code ps/<index>} in etcd, over the injected
 * {@link ChannelFactory} (TLS, interceptors). Each stream has a deadline ({@code streamMax}): when
 * it passes the follower simply resumes where it was. Channels are kept per address. A stream that
 * fails with a status before its first message, other than the transport's UNAVAILABLE, a deadline
 * or a cancellation, was refused by the primary: it ends in {@link FollowSource.Refused} with the
 * status's code and description.
 */
public final class GrpcFollowSource implements FollowSource {
  private final Coordinator coordinator;
  private final ChannelFactory channels;
  private final Duration streamMax;
  private final Map<String, ManagedChannel> open = new ConcurrentHashMap<>();

  public GrpcFollowSource(Coordinator coordinator, ChannelFactory channels, Duration streamMax) {
    this.coordinator = coordinator;
    this.channels = channels;
    this.streamMax = streamMax;
  }

  @Override
  public void follow(FollowRequest request, Sink sink) {
    int index = request.getIndex();
    Optional<KeyValueStore.KeyValue> registered =
        coordinator.kv().get(coordinator.keys().ps(index));
    if (registered.isEmpty()) {
      throw new IllegalStateException("no pserver is registered for shard " + index + " yet");
    }
    String address = new String(registered.get().value(), StandardCharsets.UTF_8);
    ManagedChannel channel = open.computeIfAbsent(address, channels::forAddress);
    try (Context.CancellableContext call = Context.current().withCancellation()) {
      Context previous = call.attach();
      try {
        Iterator<FollowMessage> stream =
            ShardFollowGrpc.newBlockingStub(channel)
                .withDeadlineAfter(streamMax.toMillis(), TimeUnit.MILLISECONDS)
                .follow(request);
        sink.connected(address);
        boolean received = false;
        try {
          while (stream.hasNext()) {
            received = true;
            if (!sink.accept(stream.next())) {
              return;
            }
          }
        } catch (StatusRuntimeException e) {
          if (!received && refusal(e.getStatus().getCode())) {
            throw new FollowSource.Refused(reason(e.getStatus()), e);
          }
          throw e;
        }
      } finally {
        call.detach(previous);
        call.cancel(null);
      }
    }
  }

  private static boolean refusal(Status.Code code) {
    return switch (code) {
      case UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED -> false;
      default -> true;
    };
  }

  private static String reason(Status status) {
    return status.getDescription() == null
        ? status.getCode().name()
        : status.getCode() + ": " + status.getDescription();
  }

  @Override
  public void close() {
    open.values().forEach(ManagedChannel::shutdownNow);
    open.clear();
  }
}
