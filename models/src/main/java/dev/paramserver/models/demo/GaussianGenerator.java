package dev.paramserver.models.demo;

import dev.paramserver.proto.v1.Example;
import java.util.Random;

/** Gaussian classes with unit noise around random means; see {@link DemoData}. */
final class GaussianGenerator implements DemoData.Generator {
  private final float[][] means;

  GaussianGenerator(DemoData.Options o) {
    Random rnd = new Random(DemoData.mix(o.seed(), 0));
    double sep = o.effectiveSeparation();
    means = new float[o.classes()][o.features()];
    for (float[] m : means) {
      for (int j = 0; j < m.length; j++) {
        m[j] = (float) (rnd.nextGaussian() * sep);
      }
    }
  }

  @Override
  public Example next(Random rnd) {
    int label = rnd.nextInt(means.length);
    float[] m = means[label];
    Example.Builder b = Example.newBuilder().setLabel(label);
    for (float v : m) {
      b.addDense((float) (v + rnd.nextGaussian()));
    }
    return b.build();
  }

  /** The nearest class mean (Bayes-optimal for equal priors and isotropic unit noise). */
  @Override
  public int oraclePredict(Example e) {
    int best = -1;
    double bestDist = Double.POSITIVE_INFINITY;
    for (int c = 0; c < means.length; c++) {
      double d = 0;
      for (int j = 0; j < means[c].length; j++) {
        double diff = e.getDense(j) - means[c][j];
        d += diff * diff;
      }
      if (d < bestDist) {
        bestDist = d;
        best = c;
      }
    }
    return best;
  }

  @Override
  public long features() {
    return means[0].length;
  }
}
