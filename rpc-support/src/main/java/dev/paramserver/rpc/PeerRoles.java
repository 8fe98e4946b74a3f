package dev.paramserver.rpc;

import dev.paramserver.errors.ErrorReason;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Authorisation by role on mutual TLS: each process of a job holds a certificate of its own role,
 * named by the subject's organisational unit ({@code OU=pserver}, {@code OU=master}, {@code
 * OU=trainer}, {@code OU=serving}). {@link #require} refuses a call to a guarded method whose
 * client certificate names another role (PERMISSION_DENIED, reason BAD_ARGUMENT, a message naming
 * the method, the roles it takes and the one presented, nothing else). A call without TLS, or whose
 * certificate names no role (one certificate shared by the whole job), is left to the job token
 * ({@link JobToken}).
 */
public final class PeerRoles {
  /** The subject attribute that names a certificate's role. */
  public static final String ATTRIBUTE = "OU";

  private PeerRoles() {}

  /**
   * A server interceptor that takes calls to the methods of {@code allowed} (full method names,
   * {@code paramserver.v1.SlotMoves/MoveIn}, or full service names for all of a service's methods,
   * a method's entry first) only from the roles it lists; other methods pass.
   */
  public static ServerInterceptor require(Map<String, Set<String>> allowed) {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String method = call.getMethodDescriptor().getFullMethodName();
        Set<String> roles = allowed.get(method);
        if (roles == null) {
          String service = call.getMethodDescriptor().getServiceName();
          roles = service == null ? null : allowed.get(service);
        }
        if (roles == null) {
          return next.startCall(call, headers);
        }
        Optional<String> role = roleOf(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION));
        if (role.isEmpty() || roles.contains(role.get())) {
          return next.startCall(call, headers);
        }
        StatusRuntimeException e =
            RpcErrors.toStatus(
                Status.Code.PERMISSION_DENIED,
                ErrorReason.BAD_ARGUMENT,
                method
                    + " takes calls from role "
                    + String.join(" or ", roles.stream().sorted().toList())
                    + " only; the caller's certificate names role '"
                    + role.get()
                    + "' ("
                    + ATTRIBUTE
                    + ")",
                Map.of());
        call.close(e.getStatus(), e.getTrailers() == null ? new Metadata() : e.getTrailers());
        return new ServerCall.Listener<>() {};
      }
    };
  }

  /** The role the peer's certificate names, if the call came over TLS with one that does. */
  static Optional<String> roleOf(SSLSession session) {
    if (session == null) {
      return Optional.empty();
    }
    Certificate[] chain;
    try {
      chain = session.getPeerCertificates();
    } catch (SSLPeerUnverifiedException e) {
      return Optional.empty();
    }
    if (chain.length == 0 || !(chain[0] instanceof X509Certificate leaf)) {
      return Optional.empty();
    }
    return roleOf(leaf.getSubjectX500Principal().getName());
  }

  /** The role an RFC 2253 subject names: its first OU, in lower case. */
  public static Optional<String> roleOf(String subject) {
    try {
      for (Rdn rdn : new LdapName(subject).getRdns()) {
        if (rdn.getType().equalsIgnoreCase(ATTRIBUTE)) {
          return Optional.of(rdn.getValue().toString().trim().toLowerCase(Locale.ROOT));
        }
      }
    } catch (InvalidNameException e) {
      return Optional.empty();
    }
    return Optional.empty();
  }
}
