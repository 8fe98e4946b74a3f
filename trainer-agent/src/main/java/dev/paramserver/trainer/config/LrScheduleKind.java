package dev.paramserver.trainer.config;

import dev.paramserver.proto.v1.LearningRateSchedule;

/**
 * How the learning rate changes with a parameter block's update count t ({@code
 * paramserver.trainer.lr-schedule}).
 */
public enum LrScheduleKind {
  /** lr(t) = learning-rate. */
  CONSTANT(LearningRateSchedule.Kind.CONSTANT),
  /** lr(t) = learning-rate * lr-gamma^floor(t / lr-step-size). */
  STEP(LearningRateSchedule.Kind.STEP),
  /** lr(t) = learning-rate * lr-gamma^t. */
  EXPONENTIAL(LearningRateSchedule.Kind.EXPONENTIAL),
  /** Linear warm-up over lr-warmup-steps, then cosine decay to lr-min at lr-total-steps. */
  WARMUP_COSINE(LearningRateSchedule.Kind.WARMUP_COSINE),
  /** Linear warm-up over lr-warmup-steps, then linear decay to lr-min at lr-total-steps. */
  WARMUP_LINEAR(LearningRateSchedule.Kind.WARMUP_LINEAR);

  private final LearningRateSchedule.Kind kind;

  LrScheduleKind(LearningRateSchedule.Kind kind) {
    this.kind = kind;
  }

  public LearningRateSchedule.Kind kind() {
    return kind;
  }
}
