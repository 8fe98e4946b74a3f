package dev.paramserver.models;

import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.FeatureScaling;

/**
 * Standardization of the dense features: feature {@code i} enters the model as {@code (x[i] -
 * mean[i]) / scale[i]}, computed in float32 exactly as the ONNX export's {@code Sub} and {@code
 * Div} nodes do, so both give the same inputs to the model.
 */
public final class Standardization {
  private final float[] mean;
  private final float[] scale;

  private Standardization(float[] mean, float[] scale) {
    this.mean = mean;
    this.scale = scale;
  }

  /**
   * Reads the proto form, checking that it has one positive, finite scale per mean.
   *
   * @throws IllegalArgumentException naming what is wrong
   */
  public static Standardization fromProto(FeatureScaling p) {
    if (p.getMeanCount() != p.getScaleCount()) {
      throw new IllegalArgumentException(
          "feature scaling has "
              + p.getMeanCount()
              + " means but "
              + p.getScaleCount()
              + " scales: one of each per feature is needed");
    }
    float[] mean = new float[p.getMeanCount()];
    float[] scale = new float[p.getScaleCount()];
    for (int i = 0; i < mean.length; i++) {
      mean[i] = p.getMean(i);
      scale[i] = p.getScale(i);
      if (!Float.isFinite(mean[i]) || !(scale[i] > 0) || !Float.isFinite(scale[i])) {
        throw new IllegalArgumentException(
            "feature scaling of feature "
                + i
                + " is mean="
                + mean[i]
                + " scale="
                + scale[i]
                + ": the mean must be finite and the scale finite and > 0");
      }
    }
    return new Standardization(mean, scale);
  }

  public FeatureScaling toProto() {
    FeatureScaling.Builder b = FeatureScaling.newBuilder();
    for (int i = 0; i < mean.length; i++) {
      b.addMean(mean[i]).addScale(scale[i]);
    }
    return b.build();
  }

  /** Number of dense features it scales. */
  public int features() {
    return mean.length;
  }

  public float mean(int i) {
    return mean[i];
  }

  public float scale(int i) {
    return scale[i];
  }

  /**
   * Scales the batch's dense features in place.
   *
   * @throws IllegalArgumentException when the batch's feature count differs
   */
  public void apply(Batch b) {
    int f = b.features();
    if (f != mean.length) {
      throw new IllegalArgumentException(
          "the batch has " + f + " dense features, the standardization has " + mean.length);
    }
    float[] x = b.dense();
    for (int r = 0; r < b.size(); r++) {
      int o = r * f;
      for (int j = 0; j < f; j++) {
        x[o + j] = (x[o + j] - mean[j]) / scale[j];
      }
    }
  }

  /** Accumulates per-feature mean and population standard deviation (Welford's method). */
  public static final class Accumulator {
    private double[] mean;
    private double[] m2;
    private long n;

    /** Adds one example's dense features; every example must have the same count. */
    public void add(Example e) {
      int f = e.getDenseCount();
      if (mean == null) {
        mean = new double[f];
        m2 = new double[f];
      } else if (f != mean.length) {
        throw new IllegalArgumentException(
            "record " + n + " has " + f + " dense features, the first had " + mean.length);
      }
      n++;
      for (int j = 0; j < f; j++) {
        double x = e.getDense(j);
        double d = x - mean[j];
        mean[j] += d / n;
        m2[j] += d * (x - mean[j]);
      }
    }

    public long count() {
      return n;
    }

    /**
     * The statistics so far; a constant feature gets scale 1 (it becomes 0 after centring).
     *
     * @throws IllegalStateException when no example was added
     */
    public Standardization result() {
      if (n == 0) {
        throw new IllegalStateException("no records to compute feature statistics on");
      }
      float[] mu = new float[mean.length];
      float[] sd = new float[mean.length];
      for (int j = 0; j < mu.length; j++) {
        mu[j] = (float) mean[j];
        double s = Math.sqrt(m2[j] / n);
        sd[j] = s > 1e-12 && (float) s > 0 ? (float) s : 1f;
      }
      return new Standardization(mu, sd);
    }
  }
}
