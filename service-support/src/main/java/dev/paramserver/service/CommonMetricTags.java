package dev.paramserver.service;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.Locale;
import org.springframework.boot.micrometer.metrics.autoconfigure.MeterRegistryCustomizer;
import org.springframework.core.env.Environment;

/**
 * Tags every meter of a service with {@code application} ({@code spring.application.name}), {@code
 * role} ({@code paramserver.role}: master, pserver or trainer; when unset, guessed from the
 * application name) and {@code paramserver_job} ({@code paramserver.job}; not {@code job}, which
 * Prometheus sets to the scrape job's name).
 */
final class CommonMetricTags implements MeterRegistryCustomizer<MeterRegistry> {
  private final Tags tags;

  CommonMetricTags(Environment environment, CommonProperties properties) {
    String application = environment.getProperty("spring.application.name", "paramserver");
    String role = environment.getProperty("paramserver.role", roleOf(application));
    this.tags =
        Tags.of("application", application, "role", role, "paramserver_job", properties.job());
  }

  Tags tags() {
    return tags;
  }

  @Override
  public void customize(MeterRegistry registry) {
    registry.config().commonTags(tags);
  }

  static String roleOf(String application) {
    String a = application.toLowerCase(Locale.ROOT);
    for (String role : new String[] {"master", "pserver", "trainer"}) {
      if (a.contains(role)) {
        return role;
      }
    }
    return "unknown";
  }
}
