package dev.paramserver.service;

import dev.paramserver.rpc.ClientTls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Turns {@link ClientTlsProperties} into the {@link ClientTls} of the service's channel factory. A
 * bad file refuses start-up with a message naming it.
 */
@AutoConfiguration
@EnableConfigurationProperties(ClientTlsProperties.class)
@ConditionalOnProperty(
    prefix = "paramserver.grpc-client.tls",
    name = "enabled",
    havingValue = "true")
public class ClientTlsConfiguration {
  private static final Logger log = LoggerFactory.getLogger(ClientTlsConfiguration.class);

  /** The client TLS settings, used by the {@code ChannelFactory} of this service. */
  @Bean
  ClientTls clientTls(ClientTlsProperties props) {
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
    log.info(
        "gRPC clients use TLS (trust {}, client certificate {})",
        props.trustCertCollection() == null ? "JVM default" : props.trustCertCollection(),
        props.certificateChain() == null ? "none" : props.certificateChain());
    return tls;
  }
}
