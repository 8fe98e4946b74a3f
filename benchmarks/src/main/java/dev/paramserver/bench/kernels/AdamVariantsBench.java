package dev.paramserver.bench.kernels;

import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Candidate rewrites of the pserver's Adam loop, measured beside it (not part of the suite's table;
 * run with {@code org.openjdk.jmh.Main AdamVariantsBench}): {@code current} is the loop {@code
 * AdamRule} had before it adopted the hoisted form (commit d78f5e3); {@code hoisted} folds the bias
 * corrections into two constants so the loop has one division and one square root per element:
 * {@code w -= (lr/c1) * m / (sqrt(v) * (1/sqrt(c2)) + eps)}, the same value up to float rounding.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Thread)
public class AdamVariantsBench {
  @Param({"1048576"})
  public int n;

  private float[] w;
  private float[] g;
  private float[] m;
  private float[] v;
  private long t;

  @Setup(Level.Trial)
  public void setUp() {
    Random rnd = new Random(3);
    w = new float[n];
    g = new float[n];
    m = new float[n];
    v = new float[n];
    for (int i = 0; i < n; i++) {
      w[i] = (float) rnd.nextGaussian();
      g[i] = (float) rnd.nextGaussian() * 1e-3f;
    }
  }

  @Benchmark
  public float[] current() {
    float b1 = 0.9f;
    float b2 = 0.999f;
    float lr = 1e-4f;
    long step = ++t;
    float c1 = (float) (1 - Math.pow(b1, step));
    float c2 = (float) (1 - Math.pow(b2, step));
    float eps = 1e-8f;
    for (int i = 0; i < n; i++) {
      float gi = g[i];
      float mi = b1 * m[i] + (1 - b1) * gi;
      float vi = b2 * v[i] + (1 - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      w[i] -= lr * (mi / c1) / ((float) Math.sqrt(vi / c2) + eps);
    }
    return w;
  }

  @Benchmark
  public float[] hoisted() {
    float b1 = 0.9f;
    float b2 = 0.999f;
    float lr = 1e-4f;
    long step = ++t;
    float c1 = (float) (1 - Math.pow(b1, step));
    float c2 = (float) (1 - Math.pow(b2, step));
    float eps = 1e-8f;
    float a = lr / c1;
    float rs = (float) (1 / Math.sqrt(c2));
    float ob1 = 1 - b1;
    float ob2 = 1 - b2;
    for (int i = 0; i < n; i++) {
      float gi = g[i];
      float mi = b1 * m[i] + ob1 * gi;
      float vi = b2 * v[i] + ob2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      w[i] -= a * mi / ((float) Math.sqrt(vi) * rs + eps);
    }
    return w;
  }
}
