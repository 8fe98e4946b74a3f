package dev.paramserver.optimizers;

import dev.paramserver.proto.v1.OptimizerConfig;
import java.util.Arrays;

/**
 * The whole update of one parameter, built from its {@link OptimizerConfig}: gradient clipping (by
 * value, then by block norm), L2 weight decay (added to the gradient; AdamW decays decoupled), the
 * learning-rate schedule and the {@link UpdateRule}. Stateless: the caller keeps weights, slots and
 * the update count, and serialises updates of one block.
 */
public final class ParameterOptimizer {
  private final OptimizerConfig config;
  private final UpdateRule rule;
  private final Schedule schedule;
  private final float clipValue;
  private final float clipNorm;
  private final float l2;

  private ParameterOptimizer(OptimizerConfig config, UpdateRule rule, Schedule schedule, float l2) {
    this.config = config;
    this.rule = rule;
    this.schedule = schedule;
    this.clipValue = config.getClipValue();
    this.clipNorm = config.getClipNorm();
    this.l2 = l2;
  }

  /**
   * Validates {@code config} for parameter {@code name} and builds the optimizer.
   *
   * @throws InvalidOptimizerException naming the parameter and the bad field
   */
  public static ParameterOptimizer of(String name, OptimizerConfig config) {
    String what = "parameter '" + name + "' optimizer " + config.getKind();
    float lr = config.getLearningRate();
    if (!(lr > 0) || !Float.isFinite(lr)) {
      throw bad(what + " needs learning_rate > 0, got " + lr);
    }
    nonNegative(what, "weight_decay", config.getWeightDecay());
    nonNegative(what, "clip_value", config.getClipValue());
    nonNegative(what, "clip_norm", config.getClipNorm());
    nonNegative(what, "epsilon", config.getEpsilon());
    float wd = config.getWeightDecay();
    UpdateRule rule =
        switch (config.getKind()) {
          case KIND_UNSPECIFIED, SGD -> {
            unit(what, "momentum", config.getMomentum());
            if (config.getNesterov() && config.getMomentum() == 0) {
              throw bad(what + " has nesterov=true but momentum=0: set momentum > 0");
            }
            yield new SgdRule(config.getMomentum(), config.getNesterov());
          }
          case ADAM, ADAMW -> {
            unit(what, "beta1", config.getBeta1());
            unit(what, "beta2", config.getBeta2());
            yield new AdamRule(
                or(config.getBeta1(), 0.9f),
                or(config.getBeta2(), 0.999f),
                or(config.getEpsilon(), 1e-8f),
                config.getKind() == OptimizerConfig.Kind.ADAMW ? wd : 0f);
          }
          case ADAGRAD -> {
            nonNegative(what, "initial_accumulator", config.getInitialAccumulator());
            yield new AdagradRule(or(config.getEpsilon(), 1e-8f), config.getInitialAccumulator());
          }
          case RMSPROP -> {
            unit(what, "rho", config.getRho());
            yield new RmsPropRule(or(config.getRho(), 0.9f), or(config.getEpsilon(), 1e-8f));
          }
          case ADADELTA -> {
            unit(what, "rho", config.getRho());
            yield new AdadeltaRule(or(config.getRho(), 0.95f), or(config.getEpsilon(), 1e-6f));
          }
          default -> throw bad(what + " is not a known optimizer kind");
        };
    Schedule schedule = Schedule.of(name, config.getSchedule(), lr);
    float l2 = config.getKind() == OptimizerConfig.Kind.ADAMW ? 0f : wd;
    return new ParameterOptimizer(config, rule, schedule, l2);
  }

  private static float or(float v, float dflt) {
    return v == 0 ? dflt : v;
  }

  private static void nonNegative(String what, String field, float v) {
    if (!(v >= 0) || !Float.isFinite(v)) {
      throw bad(what + " needs " + field + " >= 0, got " + v);
    }
  }

  private static void unit(String what, String field, float v) {
    if (!(v >= 0 && v < 1)) {
      throw bad(what + " needs 0 <= " + field + " < 1, got " + v);
    }
  }

  private static InvalidOptimizerException bad(String msg) {
    return new InvalidOptimizerException(msg);
  }

  public OptimizerConfig config() {
    return config;
  }

  /** Number of state vectors per weight vector. */
  public int slots() {
    return rule.slots();
  }

  /**
   * Whether an update is {@code w -= lr * g} with one learning rate for every update, no clipping,
   * no decay and no state: then a weight's value depends only on the sum of the gradients applied
   * to it (up to float rounding), whatever their grouping and the update count, so a trainer that
   * applies its own gradients locally holds what a pserver that applied the same gradients holds.
   */
  public boolean additive() {
    return rule.slots() == 0
        && rule instanceof SgdRule
        && schedule.constant()
        && clipValue == 0
        && clipNorm == 0
        && l2 == 0;
  }

  /** Fresh state vectors for {@code n} weights. */
  public float[][] newSlots(int n) {
    float[][] s = new float[rule.slots()][n];
    float init = rule.initialSlotValue();
    if (init != 0) {
      for (float[] slot : s) {
        Arrays.fill(slot, init);
      }
    }
    return s;
  }

  /** The learning rate of the update that follows {@code updatesBefore} updates. */
  public float learningRate(long updatesBefore) {
    return schedule.rate(updatesBefore);
  }

  /**
   * Applies gradient {@code g[gOff .. gOff + w.length)} to {@code w}. The gradient elements are
   * modified (clipped, decayed). The caller holds the block's lock.
   *
   * @param updatesBefore how many updates the block had before this one
   */
  public void update(float[] w, float[] g, int gOff, float[][] slots, long updatesBefore) {
    int n = w.length;
    if (clipValue > 0) {
      float c = clipValue;
      for (int i = 0; i < n; i++) {
        g[gOff + i] = Math.max(-c, Math.min(c, g[gOff + i]));
      }
    }
    if (clipNorm > 0) {
      double sq = 0;
      for (int i = 0; i < n; i++) {
        float gi = g[gOff + i];
        sq += gi * gi;
      }
      double norm = Math.sqrt(sq);
      if (norm > clipNorm) {
        float scale = (float) (clipNorm / norm);
        for (int i = 0; i < n; i++) {
          g[gOff + i] *= scale;
        }
      }
    }
    if (l2 > 0) {
      float d = l2;
      for (int i = 0; i < n; i++) {
        g[gOff + i] += d * w[i];
      }
    }
    rule.apply(w, g, gOff, slots, updatesBefore + 1, schedule.rate(updatesBefore));
  }
}
