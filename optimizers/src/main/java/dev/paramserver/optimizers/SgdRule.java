package dev.paramserver.optimizers;

/**
 * Stochastic gradient descent. Plain: {@code w -= lr * g}. With momentum {@code mu}: {@code v = mu
 * * v + g; w -= lr * v}; Nesterov: {@code v = mu * v + g; w -= lr * (g + mu * v)}.
 */
final class SgdRule implements UpdateRule {
  private final float momentum;
  private final boolean nesterov;

  SgdRule(float momentum, boolean nesterov) {
    this.momentum = momentum;
    this.nesterov = nesterov;
  }

  @Override
  public int slots() {
    return momentum > 0 ? 1 : 0;
  }

  @Override
  public void apply(float[] w, float[] g, int gOff, float[][] slots, long t, float lr) {
    int n = w.length;
    if (momentum == 0) {
      for (int i = 0; i < n; i++) {
        w[i] -= lr * g[gOff + i];
      }
      return;
    }
    float[] v = slots[0];
    float mu = momentum;
    if (nesterov) {
      for (int i = 0; i < n; i++) {
        float gi = g[gOff + i];
        float vi = mu * v[i] + gi;
        v[i] = vi;
        w[i] -= lr * (gi + mu * vi);
      }
    } else {
      for (int i = 0; i < n; i++) {
        float vi = mu * v[i] + g[gOff + i];
        v[i] = vi;
        w[i] -= lr * vi;
      }
    }
  }
}
