package dev.paramserver.deploy;

import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.k8s.KubernetesProperties;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.serving.ServingProperties;
import dev.paramserver.trainer.config.AgentProperties;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.ModelProperties;
import dev.paramserver.trainer.config.OptimizerProperties;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * The four services as the deployment files see them: image name, the properties they bind and the
 * ports their packaged configuration starts them on.
 */
enum ServiceRole {
  MASTER(
      "master-service",
      "master-service/src/main/resources/application.yml",
      MasterProperties.class),
  PSERVER(
      "pserver-service",
      "pserver-service/src/main/resources/application.yml",
      PserverProperties.class,
      // an elastic StatefulSet's pservers (pserver.elastic.enabled)
      KubernetesProperties.class),
  TRAINER(
      "trainer-agent",
      "trainer-agent/src/main/resources/application.properties",
      // the trainer binds one record per concern, all directly under paramserver.trainer
      AgentProperties.class,
      DataProperties.class,
      ModelProperties.class,
      OptimizerProperties.class,
      CommunicationProperties.class),
  SERVING(
      "serving-service",
      "serving-service/src/main/resources/application.yml",
      ServingProperties.class);

  final String module;
  final List<Class<?>> propertiesRecords;
  final String applicationConfig;

  ServiceRole(String module, String applicationConfig, Class<?>... propertiesRecords) {
    this.module = module;
    this.propertiesRecords = List.of(propertiesRecords);
    this.applicationConfig = applicationConfig;
  }

  /** The role of a paramserver image name ({@code paramserver/master-service:tag}), if any. */
  static ServiceRole ofImage(String image) {
    for (ServiceRole r : values()) {
      if (image != null && image.matches(".*/" + r.module + "(:.*)?")) {
        return r;
      }
    }
    return null;
  }

  /** Every {@code paramserver.*} property this service binds: the common ones and its own. */
  Set<String> properties() {
    Set<String> all = new TreeSet<>(ConfigurationPropertyNames.of(CommonProperties.class));
    // service-support's gRPC client TLS, which every service binds
    all.addAll(ConfigurationPropertyNames.of(dev.paramserver.service.ClientTlsProperties.class));
    propertiesRecords.forEach(r -> all.addAll(ConfigurationPropertyNames.of(r)));
    return all;
  }

  /** Whether an environment variable binds one of this service's properties. */
  boolean bindsEnv(String variable) {
    return properties().stream()
        .anyMatch(p -> ConfigurationPropertyNames.envNames(p).contains(variable));
  }

  /**
   * Whether the packaged configuration reads an environment variable through a placeholder ({@code
   * ${PARAMSERVER_S3_ENDPOINT:}}), as the services do for settings every role shares.
   */
  boolean readsPlaceholder(String variable) {
    return config().values().stream()
        .anyMatch(v -> v.contains("${" + variable + ":") || v.contains("${" + variable + "}"));
  }

  /** {@code server.port} of the packaged configuration. */
  int httpPort() {
    return Integer.parseInt(config().get("server.port"));
  }

  /**
   * {@code spring.grpc.server.port} of the packaged configuration; empty for the trainer (no
   * server).
   */
  OptionalInt grpcPort() {
    String p = config().get("spring.grpc.server.port");
    return p == null ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(p));
  }

  /** The packaged application.yml / application.properties, flattened to dotted keys. */
  Map<String, String> config() {
    String text = RepoFiles.read(applicationConfig);
    Map<String, String> flat = new LinkedHashMap<>();
    if (applicationConfig.endsWith(".properties")) {
      Properties props = new Properties();
      try {
        props.load(new StringReader(text));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      props.forEach((k, v) -> flat.put(k.toString(), v.toString()));
    } else {
      flatten("", RepoFiles.yaml(applicationConfig), flat);
    }
    return flat;
  }

  @SuppressWarnings("unchecked")
  private static void flatten(String prefix, Map<String, Object> map, Map<String, String> out) {
    map.forEach(
        (k, v) -> {
          String key = prefix.isEmpty() ? k : prefix + "." + k;
          if (v instanceof Map<?, ?> m) {
            flatten(key, (Map<String, Object>) m, out);
          } else {
            out.put(key, String.valueOf(v));
          }
        });
  }
}
