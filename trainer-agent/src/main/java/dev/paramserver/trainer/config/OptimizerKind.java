package dev.paramserver.trainer.config;

import dev.paramserver.proto.v1.OptimizerConfig;
import java.util.Locale;

/**
 * The update rules the pservers apply ({@code paramserver.trainer.optimizer}). {@code momentum} and
 * {@code nesterov} are SGD with momentum (0.9 unless {@code paramserver.trainer.momentum} is set),
 * the latter with Nesterov's look-ahead.
 */
public enum OptimizerKind {
  SGD(OptimizerConfig.Kind.SGD),
  MOMENTUM(OptimizerConfig.Kind.SGD),
  NESTEROV(OptimizerConfig.Kind.SGD),
  ADAM(OptimizerConfig.Kind.ADAM),
  ADAMW(OptimizerConfig.Kind.ADAMW),
  ADAGRAD(OptimizerConfig.Kind.ADAGRAD),
  RMSPROP(OptimizerConfig.Kind.RMSPROP),
  ADADELTA(OptimizerConfig.Kind.ADADELTA);

  private final OptimizerConfig.Kind kind;

  OptimizerKind(OptimizerConfig.Kind kind) {
    this.kind = kind;
  }

  /** The rule on the wire. */
  public OptimizerConfig.Kind kind() {
    return kind;
  }

  /** The name users write: sgd, momentum, ... */
  public String id() {
    return name().toLowerCase(Locale.ROOT);
  }
}
