package dev.paramserver.rpc;

import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Channel helpers: plaintext channels for tools and tests, closing a channel, parsing {@code
 * host:port}. Services build their channels through a {@link ChannelFactory} carrying their TLS and
 * interceptor settings.
 */
public final class Channels {
  /** Largest message a client accepts; senders keep well below (blocks of about 1 MiB). */
  public static final int MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

  private Channels() {}

  /** A plaintext channel to {@code host:port} without interceptors. */
  public static ManagedChannel forAddress(String hostPort) {
    return ChannelFactory.plaintext().forAddress(hostPort);
  }

  /**
   * A plaintext channel to {@code host:port} whose calls pass through {@code interceptors} (the
   * first one sees a call first).
   */
  public static ManagedChannel forAddress(String hostPort, ClientInterceptor... interceptors) {
    return new ChannelFactory(null, List.of(interceptors)).forAddress(hostPort);
  }

  /** Shuts a channel down, waiting briefly for calls in flight. */
  public static void close(ManagedChannel channel) {
    if (channel == null) {
      return;
    }
    channel.shutdown();
    try {
      if (!channel.awaitTermination(2, TimeUnit.SECONDS)) {
        channel.shutdownNow();
      }
    } catch (InterruptedException e) {
      channel.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  /** A {@code host:port} pair. */
  public record HostPort(String host, int port) {
    public static HostPort parse(String s) {
      if (s == null) {
        throw new IllegalArgumentException("address is missing: expected host:port");
      }
      int colon = s.lastIndexOf(':');
      if (colon <= 0 || colon == s.length() - 1) {
        throw new IllegalArgumentException("address '" + s + "' is not host:port");
      }
      try {
        int port = Integer.parseInt(s.substring(colon + 1));
        if (port <= 0 || port > 65535) {
          throw new IllegalArgumentException("address '" + s + "' has port out of range");
        }
        return new HostPort(s.substring(0, colon), port);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("address '" + s + "' has a non-numeric port", e);
      }
    }

    @Override
    public String toString() {
      return host + ":" + port;
    }
  }
}
