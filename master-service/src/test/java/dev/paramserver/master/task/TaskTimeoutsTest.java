package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.master.config.MasterProperties;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/** The fixed and the adaptive task timeout, and how they are configured. */
class TaskTimeoutsTest {
  private static final Duration FIXED = Duration.ofSeconds(60);

  private static MasterProperties.AdaptiveTimeout adaptive(boolean enabled) {
    return new MasterProperties.AdaptiveTimeout(
        enabled, 3.0, Duration.ofSeconds(2), Duration.ofSeconds(30), 5, 3);
  }

  @Test
  void disabled_alwaysGivesTheConfiguredTimeout() {
    TaskTimeouts t = new TaskTimeouts(FIXED, adaptive(false));
    for (int i = 0; i < 10; i++) {
      t.record(1_000);
    }
    assertThat(t.current()).isEqualTo(FIXED);
  }

  @Test
  void enabled_usesTheConfiguredTimeoutUntilEnoughSamples_thenAMultipleOfTheMedian() {
    TaskTimeouts t = new TaskTimeouts(FIXED, adaptive(true));
    t.record(1_000);
    t.record(9_000);
    assertThat(t.current()).isEqualTo(FIXED);
    t.record(3_000);
    assertThat(t.current()).isEqualTo(Duration.ofSeconds(9)); // 3 x median 3s
  }

  @Test
  void enabled_keepsTheTimeoutBetweenFloorAndCeiling_overTheRecentWindow() {
    TaskTimeouts t = new TaskTimeouts(FIXED, adaptive(true));
    for (int i = 0; i < 5; i++) {
      t.record(100);
    }
    assertThat(t.current()).isEqualTo(Duration.ofSeconds(2)); // floor
    for (int i = 0; i < 5; i++) {
      t.record(60_000); // the window of 5 now holds only slow tasks
    }
    assertThat(t.current()).isEqualTo(Duration.ofSeconds(30)); // ceiling
  }

  @Test
  void properties_bindWithDefaultsAndKebabCaseNames() {
    MasterProperties p =
        new Binder(
                new MapConfigurationPropertySource(
                    Map.of(
                        "paramserver.master.passes", "4",
                        "paramserver.master.task-timeout", "90s",
                        "paramserver.master.adaptive-timeout.enabled", "true",
                        "paramserver.master.adaptive-timeout.multiplier", "2.5")))
            .bind("paramserver.master", MasterProperties.class)
            .get();
    assertThat(p.passes()).isEqualTo(4);
    assertThat(p.chunksPerTask()).isEqualTo(1);
    assertThat(p.taskTimeout()).isEqualTo(Duration.ofSeconds(90));
    assertThat(p.maxFailures()).isEqualTo(3);
    assertThat(p.waitRetry()).isEqualTo(Duration.ofMillis(200));
    assertThat(p.timeoutCheckInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(p.adaptiveTimeout().enabled()).isTrue();
    assertThat(p.adaptiveTimeout().multiplier()).isEqualTo(2.5);
    assertThat(p.adaptiveTimeout().floor()).isEqualTo(Duration.ofSeconds(5));
    assertThat(p.adaptiveTimeout().ceiling()).isEqualTo(Duration.ofMinutes(10));
  }

  @Test
  void properties_ceilingBelowFloor_isRejectedNamingBoth() {
    assertThatThrownBy(
            () ->
                new MasterProperties.AdaptiveTimeout(
                    true, 3.0, Duration.ofSeconds(10), Duration.ofSeconds(5), 10, 3))
        .hasMessageContaining("ceiling")
        .hasMessageContaining("floor");
  }
}
