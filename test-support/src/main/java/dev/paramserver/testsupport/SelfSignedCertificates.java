package dev.paramserver.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/**
 * Certificates for TLS tests, made by the JDK's keytool: self-signed EC (P-256) certificates for
 * {@code 127.0.0.1} and {@code localhost}, valid two days, with the subject a test asks for (a role
 * certificate names its role in the OU: {@code CN=ps-1, OU=pserver}). Each is kept in a PKCS12
 * store {@code dir/<name>.p12} (alias {@code name}, password {@link #PASSWORD}) and as PEM files
 * {@code dir/<name>.crt} and {@code dir/<name>.key} (PKCS#8), the form the services read.
 */
public final class SelfSignedCertificates {
  /** The password of every store this class writes. */
  public static final String PASSWORD = "changeit";

  private SelfSignedCertificates() {}

  /** A certificate whose subject is {@code CN=<name>}; its store. */
  public static KeyStore make(Path dir, String name) throws IOException, GeneralSecurityException {
    return make(dir, name, "CN=" + name);
  }

  /** A certificate with the given subject (RFC 2253, e.g. {@code CN=ps-1, OU=pserver}). */
  public static KeyStore make(Path dir, String name, String subject)
      throws IOException, GeneralSecurityException {
    Path store = dir.resolve(name + ".p12");
    Path log = dir.resolve(name + ".keytool.log");
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
                subject,
                "-ext",
                "SAN=IP:127.0.0.1,DNS:localhost",
                "-validity",
                "2",
                "-storetype",
                "PKCS12",
                "-keystore",
                store.toString(),
                "-storepass",
                PASSWORD,
                "-keypass",
                PASSWORD)
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    try {
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        throw new IllegalStateException("keytool did not end within 60 s making " + name);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted making certificate " + name, e);
    } finally {
      p.destroyForcibly();
    }
    if (p.exitValue() != 0) {
      throw new IllegalStateException(
          "keytool failed making " + name + ": " + Files.readString(log, StandardCharsets.UTF_8));
    }
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(store)) {
      ks.load(in, PASSWORD.toCharArray());
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
            + b64.encodeToString(ks.getKey(name, PASSWORD.toCharArray()).getEncoded())
            + "\n-----END PRIVATE KEY-----\n");
    return ks;
  }
}
