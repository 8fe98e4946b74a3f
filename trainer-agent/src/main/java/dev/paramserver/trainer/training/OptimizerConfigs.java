package dev.paramserver.trainer.training;

import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.trainer.config.OptimizerProperties;
import java.util.Locale;

/** The optimizer the trainer asks the pservers to apply, from its properties. */
final class OptimizerConfigs {
  private OptimizerConfigs() {}

  static OptimizerConfig from(OptimizerProperties p) {
    OptimizerConfig.Kind kind =
        switch (p.optimizer().toLowerCase(Locale.ROOT)) {
          case "sgd", "momentum", "nesterov" -> OptimizerConfig.Kind.SGD;
          case "adam" -> OptimizerConfig.Kind.ADAM;
          case "adamw" -> OptimizerConfig.Kind.ADAMW;
          case "adagrad" -> OptimizerConfig.Kind.ADAGRAD;
          case "rmsprop" -> OptimizerConfig.Kind.RMSPROP;
          case "adadelta" -> OptimizerConfig.Kind.ADADELTA;
          default ->
              throw new IllegalArgumentException(
                  "paramserver.trainer.optimizer '"
                      + p.optimizer()
                      + "' is unknown: choose sgd, momentum, nesterov, adam, adamw, adagrad, rmsprop"
                      + " or adadelta");
        };
    String name = p.optimizer().toLowerCase(Locale.ROOT);
    float momentum = p.momentum();
    if ((name.equals("momentum") || name.equals("nesterov")) && momentum == 0f) {
      momentum = 0.9f;
    }
    return OptimizerConfig.newBuilder()
        .setKind(kind)
        .setLearningRate(p.learningRate())
        .setMomentum(momentum)
        .setNesterov(name.equals("nesterov"))
        .setWeightDecay(p.weightDecay())
        .build();
  }
}
