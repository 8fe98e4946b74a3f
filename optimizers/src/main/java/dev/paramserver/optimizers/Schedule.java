package dev.paramserver.optimizers;

import dev.paramserver.proto.v1.LearningRateSchedule;

/** The learning rate as a function of a block's update count {@code t} (from 0). */
public final class Schedule {
  private final LearningRateSchedule.Kind kind;
  private final double base;
  private final long stepSize;
  private final double gamma;
  private final long warmup;
  private final long total;
  private final double minLr;

  private Schedule(LearningRateSchedule s, float base) {
    this.kind = s.getKind();
    this.base = base;
    this.stepSize = s.getStepSize();
    this.gamma = s.getGamma();
    this.warmup = s.getWarmupSteps();
    this.total = s.getTotalSteps();
    this.minLr = s.getMinLr();
  }

  /**
   * Validates the schedule of parameter {@code name}.
   *
   * @throws InvalidOptimizerException naming the parameter and the bad field
   */
  static Schedule of(String name, LearningRateSchedule s, float base) {
    String what = "parameter '" + name + "' learning-rate schedule " + s.getKind();
    switch (s.getKind()) {
      case CONSTANT -> {}
      case STEP -> {
        if (s.getStepSize() == 0) {
          throw bad(what + " needs step_size > 0");
        }
        checkGamma(what, s.getGamma());
      }
      case EXPONENTIAL -> checkGamma(what, s.getGamma());
      case WARMUP_COSINE, WARMUP_LINEAR -> {
        if (s.getTotalSteps() <= s.getWarmupSteps()) {
          throw bad(
              what
                  + " needs total_steps > warmup_steps, got total_steps="
                  + s.getTotalSteps()
                  + " warmup_steps="
                  + s.getWarmupSteps());
        }
        if (!(s.getMinLr() >= 0) || s.getMinLr() > base) {
          throw bad(what + " needs 0 <= min_lr <= learning_rate, got min_lr=" + s.getMinLr());
        }
      }
      default -> throw bad(what + " is not a known schedule kind");
    }
    return new Schedule(s, base);
  }

  private static void checkGamma(String what, float gamma) {
    if (!(gamma > 0) || !Float.isFinite(gamma)) {
      throw bad(what + " needs gamma > 0, got " + gamma);
    }
  }

  private static InvalidOptimizerException bad(String msg) {
    return new InvalidOptimizerException(msg);
  }

  /** Whether the rate is the same for every update. */
  boolean constant() {
    return kind == LearningRateSchedule.Kind.CONSTANT;
  }

  /** The learning rate of the update that follows {@code t} earlier updates. */
  public float rate(long t) {
    double lr =
        switch (kind) {
          case STEP -> base * Math.pow(gamma, (double) (t / stepSize));
          case EXPONENTIAL -> base * Math.pow(gamma, (double) t);
          case WARMUP_COSINE, WARMUP_LINEAR -> warmupThenDecay(t);
          default -> base;
        };
    return (float) lr;
  }

  private double warmupThenDecay(long t) {
    if (t < warmup) {
      return base * t / warmup;
    }
    double p = Math.min(1.0, (double) (t - warmup) / (total - warmup));
    if (kind == LearningRateSchedule.Kind.WARMUP_COSINE) {
      return minLr + (base - minLr) * 0.5 * (1 + Math.cos(Math.PI * p));
    }
    return base + (minLr - base) * p;
  }
}
