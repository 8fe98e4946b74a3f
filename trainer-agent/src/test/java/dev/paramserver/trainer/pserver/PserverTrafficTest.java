package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.trainer.training.TrainerMetrics;
import dev.paramserver.trainer.training.TrainingProgress;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Acknowledged pushes are counted per pserver and shown as a tagged counter. */
class PserverTrafficTest {
  private final PserverTraffic traffic = new PserverTraffic();

  @Test
  void acknowledgedPushes_areCountedPerPserver_andRegisteredAsTaggedCounters() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    traffic.acknowledged(1); // before the metrics exist
    new TrainerMetrics(registry, new TrainingProgress(), traffic);
    traffic.acknowledged(0);
    traffic.acknowledged(1);
    traffic.acknowledged(1);

    assertThat(traffic.acknowledgedPushes()).isEqualTo(Map.of(0, 1L, 1, 3L));
    assertThat(traffic.acknowledgedPushes(7)).isZero();
    assertThat(
            registry
                .get("paramserver.trainer.pushes.acknowledged")
                .tag("pserver", "1")
                .functionCounter()
                .count())
        .isEqualTo(3.0);
    assertThat(
            registry
                .get("paramserver.trainer.pushes.acknowledged")
                .tag("pserver", "0")
                .functionCounter()
                .count())
        .isEqualTo(1.0);
  }
}
