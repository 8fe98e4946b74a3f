package dev.paramserver.service;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Adds the defaults every paramserver service wants, at the lowest precedence (any
 * application.properties, environment variable or command-line argument overrides them):
 *
 * <ul>
 *   <li>{@code server.shutdown=graceful}, {@code spring.lifecycle.timeout-per-shutdown-phase=30s}
 *   <li>actuator: {@code management.endpoints.web.exposure.include=health,info,prometheus}, probes
 *       enabled, {@code management.endpoint.health.show-components=always}
 *   <li>{@code management.endpoint.health.group.readiness.include=readinessState,etcd}. A role that
 *       is not ready (a standby master, a pserver still loading its shard) says so by publishing
 *       {@code AvailabilityChangeEvent.publish(context, ReadinessState.REFUSING_TRAFFIC)}, and
 *       {@code ACCEPTING_TRAFFIC} once it is; that needs no property. A service that adds its own
 *       health indicator to readiness instead sets this property to the full list, e.g. {@code
 *       readinessState,etcd,master}
 *   <li>{@code management.endpoint.health.group.liveness.include=livenessState}
 * </ul>
 */
public final class ServiceDefaults implements EnvironmentPostProcessor {
  /** Name of the property source holding these defaults. */
  public static final String SOURCE_NAME = "paramserverServiceDefaults";

  static Map<String, Object> defaults() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("server.shutdown", "graceful");
    d.put("spring.lifecycle.timeout-per-shutdown-phase", "30s");
    d.put("management.endpoints.web.exposure.include", "health,info,prometheus");
    d.put("management.endpoint.health.probes.enabled", "true");
    d.put("management.endpoint.health.show-components", "always");
    d.put("management.endpoint.health.group.readiness.include", "readinessState,etcd");
    d.put("management.endpoint.health.group.liveness.include", "livenessState");
    return d;
  }

  @Override
  public void postProcessEnvironment(
      ConfigurableEnvironment environment, SpringApplication application) {
    if (!environment.getPropertySources().contains(SOURCE_NAME)) {
      environment.getPropertySources().addLast(new MapPropertySource(SOURCE_NAME, defaults()));
    }
  }
}
