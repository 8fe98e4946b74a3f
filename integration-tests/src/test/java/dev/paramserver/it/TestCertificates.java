package dev.paramserver.it;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.Role;
import java.nio.file.Path;

/**
 * A local cluster's TLS settings for certificates made by test-support's {@code
 * SelfSignedCertificates} (PEM files {@code dir/<name>.crt} and {@code .key}).
 */
final class TestCertificates {
  private TestCertificates() {}

  /**
   * The master and the pservers serve TLS with {@code dir/server.crt} and require a client
   * certificate that {@code trusted} (a PEM file of certificates) holds.
   */
  static void serversRequireClientCertificates(ClusterSpec.Builder spec, Path dir, Path trusted) {
    for (Role server : new Role[] {Role.MASTER, Role.PSERVER}) {
      spec.property(server, "grpc.server.security.enabled", "true")
          .property(
              server, "grpc.server.security.certificate-chain", "file:" + dir.resolve("server.crt"))
          .property(server, "grpc.server.security.private-key", "file:" + dir.resolve("server.key"))
          .property(server, "grpc.server.security.trust-cert-collection", "file:" + trusted)
          .property(server, "grpc.server.security.client-auth", "REQUIRE");
    }
  }

  /** {@code client} dials TLS trusting {@code dir/server.crt}, with {@code dir/<cert>.crt/.key}. */
  static void clientPresents(ClusterSpec.Builder spec, Role client, Path dir, String cert) {
    spec.property(client, "paramserver.grpc-client.tls.enabled", "true")
        .property(
            client,
            "paramserver.grpc-client.tls.trust-cert-collection",
            dir.resolve("server.crt").toString())
        .property(
            client,
            "paramserver.grpc-client.tls.certificate-chain",
            dir.resolve(cert + ".crt").toString())
        .property(
            client,
            "paramserver.grpc-client.tls.private-key",
            dir.resolve(cert + ".key").toString());
  }
}
