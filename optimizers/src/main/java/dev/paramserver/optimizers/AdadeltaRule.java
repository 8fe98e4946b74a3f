package dev.paramserver.optimizers;

/**
 * Adadelta (Zeiler): {@code Eg = rho Eg + (1-rho) g^2; dx = sqrt(Edx + eps) / sqrt(Eg + eps) * g;
 * Edx = rho Edx + (1-rho) dx^2; w -= lr * dx}.
 */
final class AdadeltaRule implements UpdateRule {
  private final float rho;
  private final float epsilon;

  AdadeltaRule(float rho, float epsilon) {
    this.rho = rho;
    this.epsilon = epsilon;
  }

  @Override
  public int slots() {
    return 2;
  }

  @Override
  public void apply(float[] w, float[] g, int gOff, float[][] slots, long t, float lr) {
    int n = w.length;
    float[] eg = slots[0];
    float[] edx = slots[1];
    float r = rho;
    float eps = epsilon;
    for (int i = 0; i < n; i++) {
      float gi = g[gOff + i];
      float egi = r * eg[i] + (1 - r) * gi * gi;
      eg[i] = egi;
      float dx = (float) (Math.sqrt(edx[i] + eps) / Math.sqrt(egi + eps)) * gi;
      edx[i] = r * edx[i] + (1 - r) * dx * dx;
      w[i] -= lr * dx;
    }
  }
}
