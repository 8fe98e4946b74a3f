package dev.paramserver.pserver.grpc;

import dev.paramserver.proto.v1.ShardFollowGrpc;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.rpc.JobToken;
import dev.paramserver.rpc.PeerRoles;
import dev.paramserver.service.CommonProperties;
import io.grpc.ServerInterceptor;
import java.util.Map;
import java.util.Set;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.grpc.server.GlobalServerInterceptor;

/**
 * The one guard of the pserver's internal services (ShardReplication: Replicate, Fill; SlotMoves:
 * MoveOut, MoveIn, AwaitCopyInstalled; ShardFollow: Follow, the change stream serving replicas
 * read): with a job token set ({@code paramserver.admin.token}) a call without it is refused
 * UNAUTHENTICATED before it reaches the service. Peers send it on every call (the services' {@code
 * ChannelFactory}). Without a token the services are open, as before.
 *
 * <p>With mutual TLS and a certificate per role (the role in the subject's OU) the calls are also
 * authorised by role ({@link PeerRoles}, {@link #ROLES}): only a pserver fills a backup, replicates
 * or feeds a move, only the master starts one, only a serving replica or a pserver follows the
 * shard's changes; a trainer's certificate is refused PERMISSION_DENIED even with the token.
 */
@Configuration(proxyBeanMethods = false)
public class InternalCallsConfiguration {
  /** The services only the job's own processes may call. */
  static final Set<String> INTERNAL =
      Set.of(
          ShardReplicationGrpc.SERVICE_NAME,
          SlotMovesGrpc.SERVICE_NAME,
          ShardFollowGrpc.SERVICE_NAME);

  /**
   * Who may call what, by the role a client certificate names: Replicate and Fill come from the
   * shard's primary, MoveIn and AwaitCopyInstalled from the old owner of moving slots (pservers);
   * MoveOut from the master's placement coordinator; Follow from serving replicas (role {@code
   * serving}) and pservers (a pserver may follow a shard as a serving replica does).
   */
  static final Map<String, Set<String>> ROLES =
      Map.of(
          ShardReplicationGrpc.SERVICE_NAME,
          Set.of("pserver"),
          SlotMovesGrpc.getMoveInMethod().getFullMethodName(),
          Set.of("pserver"),
          SlotMovesGrpc.getAwaitCopyInstalledMethod().getFullMethodName(),
          Set.of("pserver"),
          SlotMovesGrpc.getMoveOutMethod().getFullMethodName(),
          Set.of("master"),
          ShardFollowGrpc.SERVICE_NAME,
          Set.of("serving", "pserver"));

  /** Beside the token check, outside the call limits: a refused call takes no admission. */
  @Bean
  @GlobalServerInterceptor
  @Order(Ordered.HIGHEST_PRECEDENCE + 6)
  ServerInterceptor internalCallRoles() {
    return PeerRoles.require(ROLES);
  }

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
