package dev.paramserver.rpc;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * TLS for client channels: the certificates that the client trusts, and for mutual TLS its own
 * certificate chain and private key (PEM files).
 *
 * @param trustCertCollection PEM certificates of the servers' CA (null: the JDK's default trust)
 * @param certificateChain PEM certificate chain this client presents (mutual TLS), or null
 * @param privateKey PEM PKCS#8 private key of that chain, or null
 * @param authorityOverride the name to check the server certificate against instead of the address
 *     dialled, or null
 */
public record ClientTls(
    Path trustCertCollection, Path certificateChain, Path privateKey, String authorityOverride) {

  public ClientTls {
    if ((certificateChain == null) != (privateKey == null)) {
      throw new IllegalArgumentException(
          "a client certificate chain and its private key go together: set both or neither");
    }
    for (Path p : new Path[] {trustCertCollection, certificateChain, privateKey}) {
      if (p != null && !Files.isReadable(p)) {
        throw new IllegalArgumentException("TLS file " + p + " is missing or not readable");
      }
    }
  }

  /** The Netty SSL context these settings describe. */
  SslContext sslContext() {
    try {
      SslContextBuilder b = GrpcSslContexts.forClient();
      if (trustCertCollection != null) {
        b.trustManager(trustCertCollection.toFile());
      }
      if (certificateChain != null) {
        b.keyManager(certificateChain.toFile(), privateKey.toFile());
      }
      return b.build();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot set up TLS from " + this, e);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "cannot set up TLS from " + this + ": " + e.getMessage(), e);
    }
  }
}
