package dev.paramserver.optimizers;

/** RMSProp: {@code s = rho s + (1-rho) g^2; w -= lr * g / (sqrt(s) + eps)}. */
final class RmsPropRule implements UpdateRule {
  private final float rho;
  private final float epsilon;

  RmsPropRule(float rho, float epsilon) {
    this.rho = rho;
    this.epsilon = epsilon;
  }

  @Override
  public int slots() {
    return 1;
  }

  @Override
  public void apply(float[] w, float[] g, int gOff, float[][] slots, long t, float lr) {
    int n = w.length;
    float[] s = slots[0];
    float r = rho;
    float eps = epsilon;
    for (int i = 0; i < n; i++) {
      float gi = g[gOff + i];
      float si = r * s[i] + (1 - r) * gi * gi;
      s[i] = si;
      w[i] -= lr * gi / ((float) Math.sqrt(si) + eps);
    }
  }
}
