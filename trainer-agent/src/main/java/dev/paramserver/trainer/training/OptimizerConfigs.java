package dev.paramserver.trainer.training;

import dev.paramserver.proto.v1.LearningRateSchedule;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.trainer.config.OptimizerKind;
import dev.paramserver.trainer.config.OptimizerProperties;

/**
 * The optimizers the trainer asks the pservers to apply (dense and sparse), from its properties.
 */
public final class OptimizerConfigs {
  private OptimizerConfigs() {}

  /** The optimizer of dense parameters. */
  public static OptimizerConfig dense(OptimizerProperties p) {
    return build(
        p.optimizer(),
        p.learningRate(),
        p.momentum(),
        p.weightDecay(),
        p.beta1(),
        p.beta2(),
        p.epsilon() == null ? 0f : p.epsilon(),
        p.rho() == null ? 0f : p.rho(),
        p.initialAccumulator(),
        p.clipValue(),
        p.clipNorm(),
        schedule(p));
  }

  /** The optimizer of sparse tables: {@code sparse.*} where set, else the dense settings. */
  public static OptimizerConfig sparse(OptimizerProperties p) {
    OptimizerProperties.Sparse s = p.sparse();
    return build(
        or(s.optimizer(), p.optimizer()),
        or(s.learningRate(), p.learningRate()),
        or(s.momentum(), p.momentum()),
        or(s.weightDecay(), p.weightDecay()),
        or(s.beta1(), p.beta1()),
        or(s.beta2(), p.beta2()),
        or(s.epsilon(), p.epsilon() == null ? 0f : p.epsilon()),
        or(s.rho(), p.rho() == null ? 0f : p.rho()),
        or(s.initialAccumulator(), p.initialAccumulator()),
        or(s.clipValue(), p.clipValue()),
        or(s.clipNorm(), p.clipNorm()),
        schedule(p));
  }

  private static OptimizerConfig build(
      OptimizerKind kind,
      float learningRate,
      float momentum,
      float weightDecay,
      float beta1,
      float beta2,
      float epsilon,
      float rho,
      float initialAccumulator,
      float clipValue,
      float clipNorm,
      LearningRateSchedule schedule) {
    boolean withMomentum = kind == OptimizerKind.MOMENTUM || kind == OptimizerKind.NESTEROV;
    if (withMomentum && momentum == 0f) {
      momentum = 0.9f;
    }
    return OptimizerConfig.newBuilder()
        .setKind(kind.kind())
        .setLearningRate(learningRate)
        .setMomentum(momentum)
        .setNesterov(kind == OptimizerKind.NESTEROV)
        .setWeightDecay(weightDecay)
        .setBeta1(beta1)
        .setBeta2(beta2)
        .setEpsilon(epsilon)
        .setRho(rho)
        .setInitialAccumulator(initialAccumulator)
        .setClipValue(clipValue)
        .setClipNorm(clipNorm)
        .setSchedule(schedule)
        .build();
  }

  private static LearningRateSchedule schedule(OptimizerProperties p) {
    return LearningRateSchedule.newBuilder()
        .setKind(p.lrSchedule().kind())
        .setStepSize(p.lrStepSize())
        .setGamma(p.lrGamma())
        .setWarmupSteps(p.lrWarmupSteps())
        .setTotalSteps(p.lrTotalSteps())
        .setMinLr(p.lrMin())
        .build();
  }

  private static <T> T or(T value, T dflt) {
    return value != null ? value : dflt;
  }
}
