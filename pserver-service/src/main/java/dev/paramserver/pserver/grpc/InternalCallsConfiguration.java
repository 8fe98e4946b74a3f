package dev.paramserver.pserver.grpc;

import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.rpc.JobToken;
import dev.paramserver.service.CommonProperties;
import io.grpc.ServerInterceptor;
import java.util.Set;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.grpc.server.GlobalServerInterceptor;

/**
 * The one guard of the pserver's internal services (ShardReplication: Replicate, Fill; SlotMoves:
 * MoveOut, MoveIn): with a job token set ({@code paramserver.admin.token}) a call without it is
 * refused UNAUTHENTICATED before it reaches the service. Peers send it on every call (the services'
 * {@code ChannelFactory}). Without a token the services are open, as before.
 */
@Configuration(proxyBeanMethods = false)
public class InternalCallsConfiguration {
  /** The services only the job's own processes may call. */
  static final Set<String> INTERNAL =
      Set.of(ShardReplicationGrpc.SERVICE_NAME, SlotMovesGrpc.SERVICE_NAME);

  /** Outside the call limits: an unauthenticated call takes no admission. */
  @Bean
  @GlobalServerInterceptor
  @Order(Ordered.HIGHEST_PRECEDENCE + 5)
  ServerInterceptor internalCallToken(CommonProperties properties) {
    String token = properties.admin().token();
    if (token == null || token.isEmpty()) {
      return new ServerInterceptor() {
        @Override
        public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(
            io.grpc.ServerCall<Q, R> call,
            io.grpc.Metadata headers,
            io.grpc.ServerCallHandler<Q, R> next) {
          return next.startCall(call, headers);
        }
      };
    }
    return JobToken.require(token, INTERNAL);
  }
}
