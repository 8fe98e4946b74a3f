package dev.paramserver.service;

import java.nio.file.Path;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * TLS of the gRPC calls this service makes ({@code paramserver.grpc-client.tls.*}); the trainer is
 * the client of the master and the pservers. The servers' side is Spring Boot's {@code
 * spring.grpc.server.ssl.*} with an SSL bundle (or, as before the move to Spring Boot's gRPC
 * support, {@code grpc.server.security.*}: enabled, certificate-chain, private-key, and for mutual
 * TLS trust-cert-collection with client-auth=REQUIRE; see {@link LegacyGrpcServerProperties}).
 *
 * @param enabled use TLS for every outgoing gRPC channel (default false: plaintext)
 * @param trustCertCollection PEM file of the CA certificates the servers' certificates are checked
 *     against (empty: the JVM's default trust store)
 * @param certificateChain PEM certificate chain presented to servers that require client
 *     certificates (mutual TLS)
 * @param privateKey PEM (PKCS#8) private key of {@code certificateChain}
 * @param authorityOverride host name to check the server certificates against instead of the
 *     address dialled (for certificates issued to a service name)
 */
@ConfigurationProperties("paramserver.grpc-client.tls")
public record ClientTlsProperties(
    boolean enabled,
    Path trustCertCollection,
    Path certificateChain,
    Path privateKey,
    String authorityOverride) {}
