package dev.paramserver.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.commons.logging.impl.NoOpLog;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

class LegacyGrpcServerPropertiesTest {
  private final List<String> warnings = new ArrayList<>();

  private final LegacyGrpcServerProperties processor =
      new LegacyGrpcServerProperties(
          supplier ->
              new NoOpLog() {
                @Override
                public void warn(Object message) {
                  warnings.add(String.valueOf(message));
                }
              });

  /** An environment of the given sources, highest precedence first, as Boot builds it. */
  private static StandardEnvironment environment(MapPropertySource... sources) {
    StandardEnvironment env = new StandardEnvironment();
    env.getPropertySources().remove(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME);
    env.getPropertySources().remove(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME);
    for (MapPropertySource s : sources) {
      env.getPropertySources().addLast(s);
    }
    ConfigurationPropertySources.attach(env);
    return env;
  }

  private static MapPropertySource source(String name, Map<String, Object> values) {
    return new MapPropertySource(name, values);
  }

  @Test
  void oldNames_onTheCommandLine_beatTheServicesNewDefaults_andEachLogsOneDeprecationLine() {
    StandardEnvironment env =
        environment(
            source(
                "commandLineArgs",
                Map.of("grpc.server.port", "9191", "grpc.server.address", "127.0.0.1")),
            source(
                "application.yml",
                Map.of(
                    "spring.grpc.server.port", "9092",
                    "spring.grpc.server.inbound.message.max-size", "64MB")));

    processor.postProcessEnvironment(env, new SpringApplication());

    assertThat(env.getProperty("spring.grpc.server.port")).isEqualTo("9191");
    assertThat(env.getProperty("spring.grpc.server.address")).isEqualTo("127.0.0.1");
    assertThat(env.getProperty("spring.grpc.server.inbound.message.max-size")).isEqualTo("64MB");
    assertThat(warnings)
        .containsExactlyInAnyOrder(
            "'grpc.server.port' is deprecated: set 'spring.grpc.server.port' instead (the"
                + " services moved to Spring Boot's own gRPC support)",
            "'grpc.server.address' is deprecated: set 'spring.grpc.server.address' instead (the"
                + " services moved to Spring Boot's own gRPC support)");
  }

  @Test
  void aNewNameOfHigherPrecedence_winsOverAnOldOneBelowIt() {
    StandardEnvironment env =
        environment(
            source("commandLineArgs", Map.of("spring.grpc.server.port", "7000")),
            source("application.yml", Map.of("grpc.server.port", "9191")));

    processor.postProcessEnvironment(env, new SpringApplication());

    assertThat(env.getProperty("spring.grpc.server.port")).isEqualTo("7000");
    assertThat(warnings).hasSize(1);
  }

  @Test
  void oldNamesFromEnvironmentVariables_areTranslatedToo() {
    StandardEnvironment env = environment();
    env.getPropertySources()
        .addFirst(
            new SystemEnvironmentPropertySource(
                "systemEnvironment",
                Map.of("GRPC_SERVER_PORT", "9393", "GRPC_SERVER_SHUTDOWN_GRACE_PERIOD", "3s")));

    processor.postProcessEnvironment(env, new SpringApplication());

    assertThat(env.getProperty("spring.grpc.server.port")).isEqualTo("9393");
    assertThat(env.getProperty("spring.grpc.server.shutdown.grace-period")).isEqualTo("3s");
  }

  @Test
  void oldTlsSettings_becomeAPemSslBundleThatTheServerNames() {
    StandardEnvironment env =
        environment(
            source(
                "commandLineArgs",
                Map.of(
                    "grpc.server.security.enabled", "true",
                    "grpc.server.security.certificate-chain", "file:/certs/server.crt",
                    "grpc.server.security.private-key", "file:/certs/server.key",
                    "grpc.server.security.trust-cert-collection", "file:/certs/ca.crt",
                    "grpc.server.security.client-auth", "REQUIRE")));

    processor.postProcessEnvironment(env, new SpringApplication());

    String bundle = "spring.ssl.bundle.pem." + LegacyGrpcServerProperties.TLS_BUNDLE;
    assertThat(env.getProperty("spring.grpc.server.ssl.enabled")).isEqualTo("true");
    assertThat(env.getProperty("spring.grpc.server.ssl.bundle"))
        .isEqualTo(LegacyGrpcServerProperties.TLS_BUNDLE);
    assertThat(env.getProperty("spring.grpc.server.ssl.client-auth")).isEqualTo("REQUIRE");
    assertThat(env.getProperty(bundle + ".keystore.certificate"))
        .isEqualTo("file:/certs/server.crt");
    assertThat(env.getProperty(bundle + ".keystore.private-key"))
        .isEqualTo("file:/certs/server.key");
    assertThat(env.getProperty(bundle + ".truststore.certificate")).isEqualTo("file:/certs/ca.crt");
  }

  @Test
  void anOldNameWithNoCounterpart_isReported_andNothingIsSetWithoutOldNames() {
    StandardEnvironment env =
        environment(
            source("application.yml", Map.of("grpc.server.reflection-service-enabled", "false")));

    processor.postProcessEnvironment(env, new SpringApplication());

    assertThat(warnings)
        .singleElement()
        .asString()
        .startsWith("'grpc.server.reflection-service-enabled' is no longer read");
    assertThat(env.getPropertySources().contains(LegacyGrpcServerProperties.SOURCE_NAME)).isFalse();
  }
}
