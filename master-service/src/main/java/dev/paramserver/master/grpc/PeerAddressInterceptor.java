package dev.paramserver.master.grpc;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import org.springframework.stereotype.Component;

/**
 * Makes the calling peer's host known to the Coordination service's handlers ({@link #host()}): a
 * trainer that joins without an endpoint is registered as {@code <peer host>:0}.
 */
@Component
public final class PeerAddressInterceptor implements ServerInterceptor {
  private static final Context.Key<String> PEER_HOST = Context.key("paramserver-peer-host");

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    SocketAddress remote = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    String host = remote instanceof InetSocketAddress inet ? inet.getHostString() : "";
    return Contexts.interceptCall(
        Context.current().withValue(PEER_HOST, host), call, headers, next);
  }

  /** The host of the peer of the current call, or "" when unknown. */
  static String host() {
    String h = PEER_HOST.get();
    return h == null ? "" : h;
  }
}
