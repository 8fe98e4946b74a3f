package dev.paramserver.rpc;

import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Builds client channels with the project's settings (message size cap, keep-alive), plaintext or
 * TLS, and with the client interceptors every call passes through (the first given sees a call
 * first). Immutable: a service builds one at startup from its configuration and hands it to its
 * clients. Tests may override {@link #forAddress} to reach in-process servers by name.
 */
public class ChannelFactory {
  private static final ChannelFactory PLAINTEXT = new ChannelFactory(null, List.of());

  private final ClientTls tls;
  private final List<ClientInterceptor> interceptors;

  /**
   * @param tls TLS settings, or null for plaintext
   * @param interceptors client interceptors, in the order they see a call
   */
  public ChannelFactory(ClientTls tls, List<ClientInterceptor> interceptors) {
    this.tls = tls;
    this.interceptors = List.copyOf(interceptors);
  }

  /** Plaintext channels without interceptors. */
  public static ChannelFactory plaintext() {
    return PLAINTEXT;
  }

  /** This factory with TLS settings (null: plaintext). */
  public ChannelFactory withTls(ClientTls settings) {
    return new ChannelFactory(settings, interceptors);
  }

  /** This factory with these interceptors instead of its own. */
  public ChannelFactory withInterceptors(List<ClientInterceptor> list) {
    return new ChannelFactory(tls, list);
  }

  /** The TLS settings, or null for plaintext. */
  public ClientTls tls() {
    return tls;
  }

  public List<ClientInterceptor> interceptors() {
    return interceptors;
  }

  /** A channel to {@code host:port}. */
  public ManagedChannel forAddress(String hostPort) {
    Channels.HostPort hp = Channels.HostPort.parse(hostPort);
    NettyChannelBuilder builder =
        NettyChannelBuilder.forAddress(hp.host(), hp.port())
            // responses complete on the transport thread: callers wait on futures or blocking
            // stubs, never run blocking callbacks, so the hop through an executor is pure cost
            .directExecutor()
            .flowControlWindow(16 * 1024 * 1024)
            .maxInboundMessageSize(Channels.MAX_MESSAGE_BYTES)
            .keepAliveTime(30, TimeUnit.SECONDS)
            .keepAliveWithoutCalls(false);
    if (tls == null) {
      builder.usePlaintext();
    } else {
      builder.useTransportSecurity().sslContext(tls.sslContext());
      if (tls.authorityOverride() != null && !tls.authorityOverride().isBlank()) {
        builder.overrideAuthority(tls.authorityOverride());
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
}
