package dev.paramserver.optimizers;

/**
 * Adagrad with the textbook sign: {@code acc += g^2; w -= lr * g / (sqrt(acc) + eps)}. (The older
 * reference design added the step instead of subtracting it.)
 */
final class AdagradRule implements UpdateRule {
  private final float epsilon;
  private final float initialAccumulator;

  AdagradRule(float epsilon, float initialAccumulator) {
    this.epsilon = epsilon;
    this.initialAccumulator = initialAccumulator;
  }

  @Override
  public int slots() {
    return 1;
  }

  @Override
  public float initialSlotValue() {
    return initialAccumulator;
  }

  @Override
  public void apply(float[] w, float[] g, int gOff, float[][] slots, long t, float lr) {
    int n = w.length;
    float[] acc = slots[0];
    float eps = epsilon;
    for (int i = 0; i < n; i++) {
      float gi = g[gOff + i];
      float a = acc[i] + gi * gi;
      acc[i] = a;
      w[i] -= lr * gi / ((float) Math.sqrt(a) + eps);
    }
  }
}
