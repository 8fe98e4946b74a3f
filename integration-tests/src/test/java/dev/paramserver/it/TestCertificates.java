package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

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
}
