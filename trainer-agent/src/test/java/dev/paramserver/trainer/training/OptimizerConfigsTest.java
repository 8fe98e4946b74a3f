package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.trainer.config.OptimizerProperties;
import org.junit.jupiter.api.Test;

class OptimizerConfigsTest {
  private static OptimizerProperties props(String optimizer, float momentum) {
    return new OptimizerProperties(optimizer, 0.05f, momentum, 0f, 1);
  }

  @Test
  void namesMapToKindsWithLearningRate() {
    assertThat(OptimizerConfigs.from(props("adam", 0)).getKind())
        .isEqualTo(OptimizerConfig.Kind.ADAM);
    assertThat(OptimizerConfigs.from(props("ADAGRAD", 0)).getKind())
        .isEqualTo(OptimizerConfig.Kind.ADAGRAD);
    assertThat(OptimizerConfigs.from(props("sgd", 0)).getLearningRate()).isEqualTo(0.05f);
  }

  @Test
  void nesterovMeansSgdWithMomentum() {
    OptimizerConfig c = OptimizerConfigs.from(props("nesterov", 0));
    assertThat(c.getKind()).isEqualTo(OptimizerConfig.Kind.SGD);
    assertThat(c.getNesterov()).isTrue();
    assertThat(c.getMomentum()).isEqualTo(0.9f);
  }

  @Test
  void unknownOptimizer_namesTheProperty() {
    assertThatThrownBy(() -> OptimizerConfigs.from(props("lion", 0)))
        .hasMessageContaining("paramserver.trainer.optimizer 'lion'");
  }
}
