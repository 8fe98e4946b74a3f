package dev.paramserver.rpc;

import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Client channels with the project's settings: message size cap, keep-alive, plaintext or TLS.
 *
 * <p>Process-wide default interceptors ({@link #setDefaultInterceptors}) let a Spring service add
 * client instrumentation (call-latency metrics) to every channel built with {@link
 * #forAddress(String)}, including those built by plain classes that know nothing of Spring.
 */
public final class Channels {
  /** Largest message a client accepts; senders keep well below (blocks of about 1 MiB). */
  public static final int MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

  private static volatile List<ClientInterceptor> defaultInterceptors = List.of();
  private static volatile ClientTls tls;

  private Channels() {}

  /**
   * A channel to {@code host:port} (plaintext, or TLS after {@link #setTls}), with the {@link
   * #defaultInterceptors()}.
   */
  public static ManagedChannel forAddress(String hostPort) {
    return forAddress(hostPort, defaultInterceptors);
  }

  /**
   * A plaintext channel to {@code host:port} whose calls pass through {@code interceptors} (the
   * first one sees a call first), and not through the defaults.
   */
  public static ManagedChannel forAddress(String hostPort, ClientInterceptor... interceptors) {
    return forAddress(hostPort, List.of(interceptors));
  }

  /** Like {@link #forAddress(String, ClientInterceptor...)}, with a list. */
  public static ManagedChannel forAddress(String hostPort, List<ClientInterceptor> interceptors) {
    HostPort hp = HostPort.parse(hostPort);
    NettyChannelBuilder builder =
        NettyChannelBuilder.forAddress(hp.host(), hp.port())
            // responses complete on the transport thread: callers wait on futures or blocking
            // stubs, never run blocking callbacks, so the hop through an executor is pure cost
            .directExecutor()
            .flowControlWindow(16 * 1024 * 1024)
            .maxInboundMessageSize(MAX_MESSAGE_BYTES)
            .keepAliveTime(30, TimeUnit.SECONDS)
            .keepAliveWithoutCalls(false);
    ClientTls t = tls;
    if (t == null) {
      builder.usePlaintext();
    } else {
      builder.useTransportSecurity().sslContext(t.sslContext());
      if (t.authorityOverride() != null && !t.authorityOverride().isBlank()) {
        builder.overrideAuthority(t.authorityOverride());
      }
    }
    if (!interceptors.isEmpty()) {
      // intercept() runs the last-given interceptor first; reverse so the first given runs first
      ClientInterceptor[] reversed = new ClientInterceptor[interceptors.size()];
      for (int i = 0; i < reversed.length; i++) {
        reversed[i] = interceptors.get(reversed.length - 1 - i);
      }
      builder.intercept(reversed);
    }
    return builder.build();
  }

  /**
   * Makes every channel built after this call use TLS with these settings (null: plaintext, the
   * default). Set once at application startup from configuration.
   */
  public static void setTls(ClientTls settings) {
    tls = settings;
  }

  /** The TLS settings in force, or null for plaintext. */
  public static ClientTls tls() {
    return tls;
  }

  /**
   * Sets the interceptors that {@link #forAddress(String)} adds to every channel built after this
   * call (channels already built keep theirs). Set once at application startup, for example by a
   * Spring bean registering client metrics; an empty list removes them.
   */
  public static synchronized void setDefaultInterceptors(List<ClientInterceptor> interceptors) {
    defaultInterceptors = List.copyOf(Objects.requireNonNull(interceptors, "interceptors"));
  }

  /**
   * Removes the default interceptors only if they are still {@code expected} (so that a closing
   * application does not clear the defaults another one in the same JVM set since).
   *
   * @return true if they were removed
   */
  public static synchronized boolean clearDefaultInterceptors(List<ClientInterceptor> expected) {
    if (defaultInterceptors.equals(List.copyOf(expected))) {
      defaultInterceptors = List.of();
      return true;
    }
    return false;
  }

  /** The interceptors {@link #forAddress(String)} currently adds (empty unless set). */
  public static List<ClientInterceptor> defaultInterceptors() {
    return defaultInterceptors;
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
