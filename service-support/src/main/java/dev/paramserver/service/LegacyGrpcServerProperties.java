package dev.paramserver.service;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import org.apache.commons.logging.Log;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.logging.DeferredLogFactory;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.PropertySource;

/**
 * Keeps the gRPC server settings users set before the move to Spring Boot's own gRPC support
 * working: each {@code grpc.server.*} name (the grpc-spring-boot-starter's) is copied to its {@code
 * spring.grpc.server.*} name, and one deprecation line per name says what to write instead.
 *
 * <p>Where both names are set, the one from the source of higher precedence wins (a command-line
 * {@code --grpc.server.port} beats a {@code spring.grpc.server.port} in application.yml, and the
 * reverse), so the old names behave as before whatever the services' own defaults say. TLS from
 * {@code grpc.server.security.*} (PEM files: certificate chain, private key, trusted client
 * certificates) becomes the SSL bundle {@value #TLS_BUNDLE}, which {@code
 * spring.grpc.server.ssl.bundle} names. A {@code grpc.server.*} name with no counterpart is
 * reported, never silently dropped.
 */
public final class LegacyGrpcServerProperties implements EnvironmentPostProcessor, Ordered {
  /** Name of the property source holding the translated settings. */
  public static final String SOURCE_NAME = "paramserverLegacyGrpcServer";

  /** The SSL bundle that {@code grpc.server.security.*} becomes. */
  public static final String TLS_BUNDLE = "paramserver-grpc-server";

  private static final String PEM = "spring.ssl.bundle.pem." + TLS_BUNDLE + ".";

  /** Old name to new name, for the settings that map one to one. */
  static final Map<String, String> RENAMED = renamed();

  private final Log log;

  public LegacyGrpcServerProperties(DeferredLogFactory logs) {
    this.log = logs.getLog(LegacyGrpcServerProperties.class);
  }

  private static Map<String, String> renamed() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("grpc.server.port", "spring.grpc.server.port");
    m.put("grpc.server.address", "spring.grpc.server.address");
    m.put("grpc.server.shutdown-grace-period", "spring.grpc.server.shutdown.grace-period");
    m.put("grpc.server.max-inbound-message-size", "spring.grpc.server.inbound.message.max-size");
    m.put("grpc.server.max-inbound-metadata-size", "spring.grpc.server.inbound.metadata.max-size");
    m.put("grpc.server.in-process-name", "spring.grpc.server.inprocess.name");
    m.put("grpc.server.keep-alive-time", "spring.grpc.server.keepalive.time");
    m.put("grpc.server.keep-alive-timeout", "spring.grpc.server.keepalive.timeout");
    m.put("grpc.server.permit-keep-alive-time", "spring.grpc.server.keepalive.permit.time");
    m.put(
        "grpc.server.permit-keep-alive-without-calls",
        "spring.grpc.server.keepalive.permit.without-calls");
    m.put(
        "grpc.server.max-connection-idle", "spring.grpc.server.keepalive.connection.max-idle-time");
    m.put("grpc.server.max-connection-age", "spring.grpc.server.keepalive.connection.max-age");
    m.put(
        "grpc.server.max-connection-age-grace",
        "spring.grpc.server.keepalive.connection.grace-period");
    m.put("grpc.server.security.enabled", "spring.grpc.server.ssl.enabled");
    m.put("grpc.server.security.client-auth", "spring.grpc.server.ssl.client-auth");
    m.put("grpc.server.security.certificate-chain", PEM + "keystore.certificate");
    m.put("grpc.server.security.private-key", PEM + "keystore.private-key");
    m.put("grpc.server.security.trust-cert-collection", PEM + "truststore.certificate");
    return Map.copyOf(m);
  }

  @Override
  public int getOrder() {
    // after the config data (application.yml, profiles) is loaded
    return Ordered.LOWEST_PRECEDENCE - 10;
  }

  @Override
  public void postProcessEnvironment(
      ConfigurableEnvironment environment, SpringApplication application) {
    if (environment.getPropertySources().contains(SOURCE_NAME)) {
      return;
    }
    Map<String, Object> translated = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : RENAMED.entrySet()) {
      String old = e.getKey();
      String now = e.getValue();
      if (!environment.containsProperty(old)) {
        continue;
      }
      log.warn(
          "'"
              + old
              + "' is deprecated: set '"
              + now
              + "' instead (the services moved to Spring Boot's own gRPC support)");
      if (oldNameWins(environment, old, now)) {
        translated.put(now, environment.getProperty(old));
      }
    }
    if (translated.keySet().stream().anyMatch(k -> k.startsWith(PEM))) {
      translated.putIfAbsent("spring.grpc.server.ssl.bundle", TLS_BUNDLE);
    }
    for (String unknown : unmapped(environment)) {
      log.warn(
          "'"
              + unknown
              + "' is no longer read: the gRPC server is configured under spring.grpc.server.*"
              + " (see the configuration reference in docs/)");
    }
    if (!translated.isEmpty()) {
      environment.getPropertySources().addFirst(new MapPropertySource(SOURCE_NAME, translated));
    }
  }

  /**
   * True when the source of highest precedence that sets either name sets the old one (an
   * environment variable such as {@code GRPC_SERVER_PORT} counts as the old name).
   */
  private static boolean oldNameWins(ConfigurableEnvironment environment, String old, String now) {
    for (PropertySource<?> source : environment.getPropertySources()) {
      if (ConfigurationPropertySources.isAttachedConfigurationPropertySource(source)) {
        continue; // the view over every other source, which holds both names
      }
      boolean hasOld = source.containsProperty(old) || source.containsProperty(envName(old));
      boolean hasNew = source.containsProperty(now) || source.containsProperty(envName(now));
      if (hasOld || hasNew) {
        return hasOld;
      }
    }
    return true;
  }

  private static String envName(String name) {
    return name.replace('.', '_').replace('-', '_').toUpperCase(Locale.ROOT);
  }

  /** The {@code grpc.server.*} names set in enumerable sources that have no new name. */
  private static List<String> unmapped(ConfigurableEnvironment environment) {
    TreeSet<String> names = new TreeSet<>();
    for (PropertySource<?> source : environment.getPropertySources()) {
      if (source instanceof EnumerablePropertySource<?> e) {
        for (String name : e.getPropertyNames()) {
          if (name.startsWith("grpc.server.") && !RENAMED.containsKey(name)) {
            names.add(name);
          }
        }
      }
    }
    return List.copyOf(names);
  }
}
