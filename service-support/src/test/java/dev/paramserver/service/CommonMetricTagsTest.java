package dev.paramserver.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.mock.env.MockEnvironment;

class CommonMetricTagsTest {
  private static CommonProperties properties(String job) {
    return new Binder(new MapConfigurationPropertySource(java.util.Map.of("paramserver.job", job)))
        .bindOrCreate("paramserver", CommonProperties.class);
  }

  @Test
  void everyMeter_getsApplicationRoleAndJob_theRoleGuessedFromTheNameWhenUnset() {
    MockEnvironment env = new MockEnvironment().withProperty("spring.application.name", "pserver");
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new CommonMetricTags(env, properties("j1")).customize(registry);

    registry.counter("some.counter").increment();

    assertThat(registry.get("some.counter").counter().getId().getTags())
        .containsExactlyInAnyOrder(
            Tag.of("application", "pserver"),
            Tag.of("role", "pserver"),
            Tag.of("paramserver_job", "j1"));
  }

  @Test
  void theRoleProperty_winsOverTheApplicationName() {
    MockEnvironment env =
        new MockEnvironment()
            .withProperty("spring.application.name", "master-service")
            .withProperty("paramserver.role", "trainer");
    assertThat(new CommonMetricTags(env, properties("default")).tags().stream().toList())
        .contains(Tag.of("role", "trainer"), Tag.of("application", "master-service"));
  }

  @Test
  void roleOf_knowsTheThreeServices() {
    assertThat(
            List.of("master-service", "pserver", "trainer-agent", "other").stream()
                .map(CommonMetricTags::roleOf))
        .containsExactly("master", "pserver", "trainer", "unknown");
  }
}
