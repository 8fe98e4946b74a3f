package dev.paramserver.optimizers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.proto.v1.LearningRateSchedule;
import dev.paramserver.proto.v1.OptimizerConfig;
import org.junit.jupiter.api.Test;

/**
 * Every optimizer against numbers computed by hand (the arithmetic is in the comments). One weight
 * (or two), several updates; float32 results are compared within 1e-6.
 */
class ParameterOptimizerTest {
  private static final float TOL = 1e-6f;

  /** Runs the gradients through the optimizer and returns the weights after each update. */
  private static float[][] run(OptimizerConfig config, float[] w, float[]... gradients) {
    ParameterOptimizer opt = ParameterOptimizer.of("p", config);
    float[][] slots = opt.newSlots(w.length);
    float[][] out = new float[gradients.length][];
    for (int t = 0; t < gradients.length; t++) {
      opt.update(w, gradients[t].clone(), 0, slots, t);
      out[t] = w.clone();
    }
    return out;
  }

  private static OptimizerConfig.Builder kind(OptimizerConfig.Kind kind, float lr) {
    return OptimizerConfig.newBuilder().setKind(kind).setLearningRate(lr);
  }

  private static float[] v(float... x) {
    return x;
  }

  @Test
  void sgd_plain() {
    // w = 1, lr 0.1, g = 1, 2, -4: 1 - 0.1 = 0.9; 0.9 - 0.2 = 0.7; 0.7 + 0.4 = 1.1
    float[][] w = run(kind(OptimizerConfig.Kind.SGD, 0.1f).build(), v(1), v(1), v(2), v(-4));
    assertThat(w[0][0]).isCloseTo(0.9f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.7f, within(TOL));
    assertThat(w[2][0]).isCloseTo(1.1f, within(TOL));
  }

  @Test
  void sgd_momentum() {
    // mu 0.9, lr 0.1, g = 1 each time:
    // v1 = 1, w = 1 - 0.1 = 0.9; v2 = 0.9 + 1 = 1.9, w = 0.9 - 0.19 = 0.71;
    // v3 = 1.71 + 1 = 2.71, w = 0.71 - 0.271 = 0.439
    float[][] w =
        run(kind(OptimizerConfig.Kind.SGD, 0.1f).setMomentum(0.9f).build(), v(1), v(1), v(1), v(1));
    assertThat(w[0][0]).isCloseTo(0.9f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.71f, within(TOL));
    assertThat(w[2][0]).isCloseTo(0.439f, within(TOL));
  }

  @Test
  void sgd_nesterov() {
    // mu 0.9, lr 0.1, g = 1: w -= lr * (g + mu * v)
    // v1 = 1: w = 1 - 0.1 * 1.9 = 0.81; v2 = 1.9: w = 0.81 - 0.1 * 2.71 = 0.539;
    // v3 = 2.71: w = 0.539 - 0.1 * 3.439 = 0.1951
    float[][] w =
        run(
            kind(OptimizerConfig.Kind.SGD, 0.1f).setMomentum(0.9f).setNesterov(true).build(),
            v(1),
            v(1),
            v(1),
            v(1));
    assertThat(w[0][0]).isCloseTo(0.81f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.539f, within(TOL));
    assertThat(w[2][0]).isCloseTo(0.1951f, within(TOL));
  }

  @Test
  void adam_withDefaults() {
    // b1 0.9, b2 0.999, eps 1e-8, lr 0.1, w = 1, g = 1, -2, 0.5
    // t1: m = 0.1, v = 0.001, mhat = 1, vhat = 1, w = 1 - 0.1 = 0.9
    // t2: m = 0.09 - 0.2 = -0.11, v = 0.000999 + 0.004 = 0.004999,
    //     mhat = -0.11 / 0.19 = -0.5789474, vhat = 0.004999 / 0.001999 = 2.5007504,
    //     w = 0.9 + 0.1 * 0.5789474 / 1.5813761 = 0.9366104
    // t3: m = -0.099 + 0.05 = -0.049, v = 0.004994001 + 0.00025 = 0.005244001,
    //     mhat = -0.049 / 0.271 = -0.1808118, vhat = 0.005244001 / 0.002997001 = 1.7497495,
    //     w = 0.9366104 + 0.1 * 0.1808118 / 1.3227810 = 0.9502794
    float[][] w = run(kind(OptimizerConfig.Kind.ADAM, 0.1f).build(), v(1), v(1), v(-2), v(0.5f));
    assertThat(w[0][0]).isCloseTo(0.9f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.9366104f, within(TOL));
    assertThat(w[2][0]).isCloseTo(0.9502794f, within(TOL));
  }

  @Test
  void adamW_decaysDecoupled() {
    // as Adam, but first w *= 1 - lr * wd = 1 - 0.1 * 0.1 = 0.99:
    // t1: w = 0.99 - 0.1 = 0.89; t2: w = 0.89 * 0.99 + 0.0366104 = 0.9177104
    float[][] w =
        run(kind(OptimizerConfig.Kind.ADAMW, 0.1f).setWeightDecay(0.1f).build(), v(1), v(1), v(-2));
    assertThat(w[0][0]).isCloseTo(0.89f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.9177104f, within(TOL));
  }

  @Test
  void adagrad_subtractsTheScaledGradient() {
    // lr 0.1: acc = 1, w = 1 - 0.1 * 1 / 1 = 0.9;
    // acc = 5, w = 0.9 - 0.1 * 2 / sqrt(5) = 0.9 - 0.0894427 = 0.8105573;
    // acc = 6, w = 0.8105573 + 0.1 / sqrt(6) = 0.8105573 + 0.0408248 = 0.8513821
    float[][] w = run(kind(OptimizerConfig.Kind.ADAGRAD, 0.1f).build(), v(1), v(1), v(2), v(-1));
    assertThat(w[0][0]).isCloseTo(0.9f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.8105573f, within(TOL));
    assertThat(w[2][0]).isCloseTo(0.8513821f, within(TOL));
  }

  @Test
  void adagrad_initialAccumulator() {
    // acc0 = 12: acc = 12 + 2^2 = 16, w = 0 - 1 * 2 / sqrt(16) = -0.5
    float[][] w =
        run(kind(OptimizerConfig.Kind.ADAGRAD, 1f).setInitialAccumulator(12).build(), v(0), v(2));
    assertThat(w[0][0]).isCloseTo(-0.5f, within(TOL));
  }

  @Test
  void rmsprop() {
    // rho 0.9 (default), lr 0.01, g = 1, 1, -2:
    // s = 0.1, w = 1 - 0.01 / sqrt(0.1) = 1 - 0.0316228 = 0.9683772
    // s = 0.19, w = 0.9683772 - 0.01 / sqrt(0.19) = 0.9683772 - 0.0229416 = 0.9454356
    // s = 0.171 + 0.4 = 0.571, w = 0.9454356 + 0.02 / sqrt(0.571) = 0.9454356 + 0.0264675 =
    // 0.9719031
    float[][] w = run(kind(OptimizerConfig.Kind.RMSPROP, 0.01f).build(), v(1), v(1), v(1), v(-2));
    assertThat(w[0][0]).isCloseTo(0.9683772f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.9454356f, within(TOL));
    assertThat(w[2][0]).isCloseTo(0.9719031f, within(TOL));
  }

  @Test
  void adadelta() {
    // rho 0.95, eps 1e-6 (defaults), lr 1, g = 1, 1, 2:
    // Eg = 0.05, dx = sqrt(1e-6) / sqrt(0.050001) = 0.001 / 0.2236090 = 0.0044721,
    //   Edx = 0.05 * 0.0044721^2 = 0.99998e-6, w = 1 - 0.0044721 = 0.9955279
    // Eg = 0.0975, dx = sqrt(1.99998e-6) / sqrt(0.097501) = 0.0045291, Edx = 1.9756e-6,
    //   w = 0.9955279 - 0.0045291 = 0.9909988
    // Eg = 0.092625 + 0.2 = 0.292625, dx = sqrt(2.9756e-6) / sqrt(0.292626) * 2 = 0.0063777,
    //   w = 0.9909988 - 0.0063777 = 0.9846212
    float[][] w = run(kind(OptimizerConfig.Kind.ADADELTA, 1f).build(), v(1), v(1), v(1), v(2));
    assertThat(w[0][0]).isCloseTo(0.9955279f, within(TOL));
    assertThat(w[1][0]).isCloseTo(0.9909988f, within(TOL));
    assertThat(w[2][0]).isCloseTo(0.9846212f, within(TOL));
  }

  @Test
  void l2WeightDecay_addsToTheGradient() {
    // lr 0.1, wd 0.5, w = 2, g = 1: g' = 1 + 0.5 * 2 = 2, w = 2 - 0.2 = 1.8;
    // g' = 1 + 0.9 = 1.9, w = 1.8 - 0.19 = 1.61
    float[][] w =
        run(kind(OptimizerConfig.Kind.SGD, 0.1f).setWeightDecay(0.5f).build(), v(2), v(1), v(1));
    assertThat(w[0][0]).isCloseTo(1.8f, within(TOL));
    assertThat(w[1][0]).isCloseTo(1.61f, within(TOL));
  }

  @Test
  void clipByValue() {
    // clip 0.5, lr 1: g = [2, -3, 0.1] -> [0.5, -0.5, 0.1], w = 0 - g
    float[][] w =
        run(
            kind(OptimizerConfig.Kind.SGD, 1f).setClipValue(0.5f).build(),
            v(0, 0, 0),
            v(2, -3, 0.1f));
    assertThat(w[0]).containsExactly(v(-0.5f, 0.5f, -0.1f), within(TOL));
  }

  @Test
  void clipByNorm() {
    // clip_norm 1, lr 1: g = [3, 4] has norm 5 -> [0.6, 0.8]: w = [-0.6, -0.8];
    // then g = [0.3, 0.4] (norm 0.5) is left alone: w = [-0.9, -1.2]
    float[][] w =
        run(
            kind(OptimizerConfig.Kind.SGD, 1f).setClipNorm(1f).build(),
            v(0, 0),
            v(3, 4),
            v(0.3f, 0.4f));
    assertThat(w[0]).containsExactly(v(-0.6f, -0.8f), within(TOL));
    assertThat(w[1]).containsExactly(v(-0.9f, -1.2f), within(TOL));
  }

  private static float rate(LearningRateSchedule s, long t) {
    return ParameterOptimizer.of("p", kind(OptimizerConfig.Kind.SGD, 1f).setSchedule(s).build())
        .learningRate(t);
  }

  @Test
  void schedules() {
    LearningRateSchedule step =
        LearningRateSchedule.newBuilder()
            .setKind(LearningRateSchedule.Kind.STEP)
            .setStepSize(2)
            .setGamma(0.5f)
            .build();
    // 1 * 0.5^floor(t/2): t = 0..4 -> 1, 1, 0.5, 0.5, 0.25
    assertThat(
            new float[] {rate(step, 0), rate(step, 1), rate(step, 2), rate(step, 3), rate(step, 4)})
        .containsExactly(v(1, 1, 0.5f, 0.5f, 0.25f), within(TOL));
    LearningRateSchedule exp =
        LearningRateSchedule.newBuilder()
            .setKind(LearningRateSchedule.Kind.EXPONENTIAL)
            .setGamma(0.9f)
            .build();
    // 0.9^t: 1, 0.9, 0.81
    assertThat(new float[] {rate(exp, 0), rate(exp, 1), rate(exp, 2)})
        .containsExactly(v(1, 0.9f, 0.81f), within(TOL));
    LearningRateSchedule.Builder warm =
        LearningRateSchedule.newBuilder().setWarmupSteps(2).setTotalSteps(6).setMinLr(0.1f);
    LearningRateSchedule cos = warm.setKind(LearningRateSchedule.Kind.WARMUP_COSINE).build();
    // warm-up t/2: 0, 0.5; then p = (t-2)/4: t=2 p=0 -> 1; t=3 p=0.25 -> 0.1 + 0.9 * 0.5 *
    // (1 + cos(pi/4)) = 0.8681981; t=4 p=0.5 -> 0.55; t=6 and later -> 0.1
    assertThat(
            new float[] {
              rate(cos, 0),
              rate(cos, 1),
              rate(cos, 2),
              rate(cos, 3),
              rate(cos, 4),
              rate(cos, 6),
              rate(cos, 100)
            })
        .containsExactly(v(0, 0.5f, 1, 0.8681981f, 0.55f, 0.1f, 0.1f), within(TOL));
    LearningRateSchedule lin = warm.setKind(LearningRateSchedule.Kind.WARMUP_LINEAR).build();
    // after warm-up: 1 + (0.1 - 1) * p: t=3 -> 0.775, t=4 -> 0.55, t=6 -> 0.1
    assertThat(new float[] {rate(lin, 1), rate(lin, 2), rate(lin, 3), rate(lin, 4), rate(lin, 6)})
        .containsExactly(v(0.5f, 1, 0.775f, 0.55f, 0.1f), within(TOL));
  }

  @Test
  void schedule_isDrivenByTheUpdateCount() {
    // STEP size 2, gamma 0.5, SGD, g = 1: lr 1, 1, 0.5 -> w = -1, -2, -2.5
    LearningRateSchedule step =
        LearningRateSchedule.newBuilder()
            .setKind(LearningRateSchedule.Kind.STEP)
            .setStepSize(2)
            .setGamma(0.5f)
            .build();
    float[][] w =
        run(kind(OptimizerConfig.Kind.SGD, 1f).setSchedule(step).build(), v(0), v(1), v(1), v(1));
    assertThat(new float[] {w[0][0], w[1][0], w[2][0]})
        .containsExactly(v(-1, -2, -2.5f), within(TOL));
  }

  @Test
  void badConfigurations_areRejectedWithBadOptimizer_namingTheField() {
    assertBad(kind(OptimizerConfig.Kind.SGD, 0).build(), "learning_rate");
    assertBad(kind(OptimizerConfig.Kind.SGD, Float.NaN).build(), "learning_rate");
    assertBad(kind(OptimizerConfig.Kind.SGD, 0.1f).setMomentum(1f).build(), "momentum");
    assertBad(kind(OptimizerConfig.Kind.SGD, 0.1f).setNesterov(true).build(), "nesterov");
    assertBad(kind(OptimizerConfig.Kind.ADAM, 0.1f).setBeta1(1f).build(), "beta1");
    assertBad(kind(OptimizerConfig.Kind.ADAM, 0.1f).setBeta2(-0.5f).build(), "beta2");
    assertBad(kind(OptimizerConfig.Kind.RMSPROP, 0.1f).setRho(1.5f).build(), "rho");
    assertBad(kind(OptimizerConfig.Kind.SGD, 0.1f).setWeightDecay(-1).build(), "weight_decay");
    assertBad(kind(OptimizerConfig.Kind.SGD, 0.1f).setClipNorm(-1).build(), "clip_norm");
    assertBad(kind(OptimizerConfig.Kind.SGD, 0.1f).setKindValue(42).build(), "kind");
    assertBad(
        kind(OptimizerConfig.Kind.SGD, 0.1f)
            .setSchedule(LearningRateSchedule.newBuilder().setKind(LearningRateSchedule.Kind.STEP))
            .build(),
        "step_size");
    assertBad(
        kind(OptimizerConfig.Kind.SGD, 0.1f)
            .setSchedule(
                LearningRateSchedule.newBuilder()
                    .setKind(LearningRateSchedule.Kind.WARMUP_COSINE)
                    .setWarmupSteps(10)
                    .setTotalSteps(10))
            .build(),
        "total_steps");
  }

  private static void assertBad(OptimizerConfig config, String field) {
    assertThatThrownBy(() -> ParameterOptimizer.of("fc1.w", config))
        .isInstanceOf(InvalidOptimizerException.class)
        .hasMessageContaining("fc1.w")
        .hasMessageContaining(field);
  }
}
