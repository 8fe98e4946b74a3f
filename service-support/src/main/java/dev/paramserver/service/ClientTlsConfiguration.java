package dev.paramserver.service;

import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.ClientTls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Applies {@link ClientTlsProperties} to every channel built through {@link Channels} while the
 * application runs. A bad file refuses start-up with a message naming it.
 */
@AutoConfiguration
@EnableConfigurationProperties(ClientTlsProperties.class)
@ConditionalOnProperty(
    prefix = "paramserver.grpc-client.tls",
    name = "enabled",
    havingValue = "true")
public class ClientTlsConfiguration {
  private static final Logger log = LoggerFactory.getLogger(ClientTlsConfiguration.class);

  /** The process-wide client TLS, set at start and cleared at close. */
  @Bean
  ClientTlsActivation clientTlsActivation(ClientTlsProperties props) {
    ClientTls tls;
    try {
      tls =
          new ClientTls(
              props.trustCertCollection(),
              props.certificateChain(),
              props.privateKey(),
              props.authorityOverride());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("paramserver.grpc-client.tls: " + e.getMessage(), e);
    }
    Channels.setTls(tls);
    log.info(
        "gRPC clients use TLS (trust {}, client certificate {})",
        props.trustCertCollection() == null ? "JVM default" : props.trustCertCollection(),
        props.certificateChain() == null ? "none" : props.certificateChain());
    return new ClientTlsActivation(tls);
  }

  /** Clears the client TLS on close if it is still the one this context set. */
  static final class ClientTlsActivation implements DisposableBean {
    private final ClientTls tls;

    ClientTlsActivation(ClientTls tls) {
      this.tls = tls;
    }

    @Override
    public void destroy() {
      if (Channels.tls() == tls) {
        Channels.setTls(null);
      }
    }
  }
}
