package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.Role;
import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/** Certificates made by the JDK's keytool for TLS tests. */
final class TestCertificates {
  private TestCertificates() {}

  /** A self-signed EC certificate for 127.0.0.1 as PEM files: name.crt and name.key. */
  static void selfSigned(Path dir, String name) throws Exception {
    Path store = dir.resolve(name + ".p12");
    String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
    Process p =
        new ProcessBuilder(
                keytool,
                "-genkeypair",
                "-alias",
                name,
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
                "-sigalg",
                "SHA256withECDSA",
                "-dname",
                "CN=" + name,
                "-ext",
                "SAN=IP:127.0.0.1,DNS:localhost",
                "-validity",
                "2",
                "-keystore",
                store.toString(),
                "-storetype",
                "PKCS12",
                "-storepass",
                "changeit",
                "-keypass",
                "changeit")
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (FileInputStream in = new FileInputStream(store.toFile())) {
      ks.load(in, "changeit".toCharArray());
    }
    Base64.Encoder b64 = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII));
    Files.writeString(
        dir.resolve(name + ".crt"),
        "-----BEGIN CERTIFICATE-----\n"
            + b64.encodeToString(ks.getCertificate(name).getEncoded())
            + "\n-----END CERTIFICATE-----\n");
    Files.writeString(
        dir.resolve(name + ".key"),
        "-----BEGIN PRIVATE KEY-----\n"
            + b64.encodeToString(ks.getKey(name, "changeit".toCharArray()).getEncoded())
            + "\n-----END PRIVATE KEY-----\n");
  }

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
