package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Mlp;
import dev.paramserver.models.SparseLogisticRegression;
import dev.paramserver.proto.v1.LearningRateSchedule;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.trainer.config.OptimizerKind;
import dev.paramserver.trainer.config.OptimizerProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.pserver.ModelLayout;
import dev.paramserver.trainer.pserver.RequestPlanner;
import dev.paramserver.trainer.testing.TrainerPropertiesBinding;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Every optimizer setting, bound from its property, reaches the specs sent to the pservers. */
class OptimizerConfigsTest {
  private static OptimizerProperties props(OptimizerKind optimizer, float momentum) {
    return OptimizerProperties.of(optimizer, 0.05f, momentum, 0f);
  }

  @Test
  void kindsMapToRulesWithLearningRate() {
    assertThat(OptimizerConfigs.dense(props(OptimizerKind.ADAM, 0)).getKind())
        .isEqualTo(OptimizerConfig.Kind.ADAM);
    assertThat(OptimizerConfigs.dense(props(OptimizerKind.ADAGRAD, 0)).getKind())
        .isEqualTo(OptimizerConfig.Kind.ADAGRAD);
    assertThat(OptimizerConfigs.dense(props(OptimizerKind.SGD, 0)).getLearningRate())
        .isEqualTo(0.05f);
  }

  @Test
  void nesterovMeansSgdWithMomentum() {
    OptimizerConfig c = OptimizerConfigs.dense(props(OptimizerKind.NESTEROV, 0));
    assertThat(c.getKind()).isEqualTo(OptimizerConfig.Kind.SGD);
    assertThat(c.getNesterov()).isTrue();
    assertThat(c.getMomentum()).isEqualTo(0.9f);
    assertThat(OptimizerConfigs.dense(props(OptimizerKind.MOMENTUM, 0.5f)).getMomentum())
        .isEqualTo(0.5f);
  }

  @Test
  void everyProperty_reachesTheDenseAndSparseSpecs() {
    TrainerProperties p =
        TrainerPropertiesBinding.bind(
            Map.ofEntries(
                Map.entry("paramserver.trainer.train-data", "/d/*.recordio"),
                Map.entry("paramserver.trainer.model", "sparse-lr"),
                Map.entry("paramserver.trainer.optimizer", "adam"),
                Map.entry("paramserver.trainer.learning-rate", "0.01"),
                Map.entry("paramserver.trainer.beta1", "0.8"),
                Map.entry("paramserver.trainer.beta2", "0.99"),
                Map.entry("paramserver.trainer.epsilon", "1e-7"),
                Map.entry("paramserver.trainer.weight-decay", "0.001"),
                Map.entry("paramserver.trainer.clip-value", "2"),
                Map.entry("paramserver.trainer.clip-norm", "5"),
                Map.entry("paramserver.trainer.lr-schedule", "step"),
                Map.entry("paramserver.trainer.lr-step-size", "100"),
                Map.entry("paramserver.trainer.lr-gamma", "0.5"),
                Map.entry("paramserver.trainer.sparse.optimizer", "adagrad"),
                Map.entry("paramserver.trainer.sparse.learning-rate", "0.05"),
                Map.entry("paramserver.trainer.sparse.initial-accumulator", "0.1"),
                Map.entry("paramserver.trainer.sparse.clip-norm", "1"),
                Map.entry("paramserver.trainer.mode", "bounded-staleness"),
                Map.entry("paramserver.trainer.staleness", "3")));
    LearningRateSchedule step =
        LearningRateSchedule.newBuilder()
            .setKind(LearningRateSchedule.Kind.STEP)
            .setStepSize(100)
            .setGamma(0.5f)
            .build();
    OptimizerConfig dense =
        OptimizerConfig.newBuilder()
            .setKind(OptimizerConfig.Kind.ADAM)
            .setLearningRate(0.01f)
            .setBeta1(0.8f)
            .setBeta2(0.99f)
            .setEpsilon(1e-7f)
            .setWeightDecay(0.001f)
            .setClipValue(2f)
            .setClipNorm(5f)
            .setSchedule(step)
            .build();
    OptimizerConfig sparse =
        dense.toBuilder()
            .setKind(OptimizerConfig.Kind.ADAGRAD)
            .setLearningRate(0.05f)
            .setInitialAccumulator(0.1f)
            .setClipNorm(1f)
            .build();
    assertThat(OptimizerConfigs.dense(p.optimizer())).isEqualTo(dense);
    assertThat(OptimizerConfigs.sparse(p.optimizer())).isEqualTo(sparse);

    ModelLayout layout =
        new ModelLayout(
            new SparseLogisticRegression(4, 2),
            1000,
            OptimizerConfigs.dense(p.optimizer()),
            OptimizerConfigs.sparse(p.optimizer()),
            2);
    Map<Boolean, java.util.Set<OptimizerConfig>> byKind =
        layout.specs().stream()
            .collect(
                Collectors.groupingBy(
                    ParameterSpec::getSparse,
                    Collectors.mapping(ParameterSpec::getOptimizer, Collectors.toSet())));
    assertThat(byKind.get(false)).containsExactly(dense);
    assertThat(byKind.get(true)).containsExactly(sparse);

    RequestPlanner planner =
        new RequestPlanner(
            layout,
            "t1",
            p.communication().gradientWireType(),
            p.communication().mode().wire(),
            p.communication().staleness());
    var init =
        planner
            .inits(
                0,
                dev.paramserver.models.Initializers.initial(new SparseLogisticRegression(4, 2), 1),
                "init-1")
            .get(0);
    assertThat(init.getMode()).isEqualTo(TrainingMode.BOUNDED_STALENESS);
    assertThat(init.getStaleness()).isEqualTo(3);
  }

  @Test
  void sparseSettingsUnset_takeTheDenseOnes() {
    OptimizerProperties p = props(OptimizerKind.RMSPROP, 0);
    assertThat(OptimizerConfigs.sparse(p)).isEqualTo(OptimizerConfigs.dense(p));
    assertThat(new ModelLayout(Mlp.softmax(3, 2), 10, OptimizerConfigs.dense(p), 1).specs())
        .allSatisfy(
            s -> assertThat(s.getOptimizer().getKind()).isEqualTo(OptimizerConfig.Kind.RMSPROP));
  }
}
