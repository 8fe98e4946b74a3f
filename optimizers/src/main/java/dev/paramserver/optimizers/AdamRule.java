package dev.paramserver.optimizers;

/**
 * Adam (Kingma and Ba): {@code m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; w -= lr * (m / (1 -
 * b1^t)) / (sqrt(v / (1 - b2^t)) + eps)}. AdamW first decays the weights, decoupled from the
 * gradient: {@code w -= lr * wd * w}.
 */
final class AdamRule implements UpdateRule {
  private final float beta1;
  private final float beta2;
  private final float epsilon;
  private final float decoupledDecay;

  AdamRule(float beta1, float beta2, float epsilon, float decoupledDecay) {
    this.beta1 = beta1;
    this.beta2 = beta2;
    this.epsilon = epsilon;
    this.decoupledDecay = decoupledDecay;
  }

  @Override
  public int slots() {
    return 2;
  }

  @Override
  public void apply(float[] w, float[] g, int gOff, float[][] slots, long t, float lr) {
    int n = w.length;
    float[] m = slots[0];
    float[] v = slots[1];
    float b1 = beta1;
    float b2 = beta2;
    // lr * (m / c1) / (sqrt(v / c2) + eps) == step * m / (sqrt(v) * invSqrtC2 + eps): one square
    // root and one division per element, which the JIT vectorises
    double c1 = 1 - Math.pow(beta1, t);
    double c2 = 1 - Math.pow(beta2, t);
    float step = (float) (lr / c1);
    float invSqrtC2 = (float) (1 / Math.sqrt(c2));
    float eps = epsilon;
    if (decoupledDecay > 0) {
      float keep = 1f - lr * decoupledDecay;
      for (int i = 0; i < n; i++) {
        w[i] *= keep;
      }
    }
    for (int i = 0; i < n; i++) {
      float gi = g[gOff + i];
      float mi = b1 * m[i] + (1 - b1) * gi;
      float vi = b2 * v[i] + (1 - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      w[i] -= step * mi / ((float) Math.sqrt(vi) * invSqrtC2 + eps);
    }
  }
}
