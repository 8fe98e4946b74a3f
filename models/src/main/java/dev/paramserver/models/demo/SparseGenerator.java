package dev.paramserver.models.demo;

import dev.paramserver.proto.v1.Example;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Click-through-like binary data from a hidden logistic model over hashed categorical fields; see
 * {@link DemoData}.
 */
final class SparseGenerator implements DemoData.Generator {
  private static final double BIAS = -0.5;

  private final int[] vocab;
  private final double[][] weights;
  private final long mask;
  private final long salt;
  private final List<Map<Long, Double>> weightById = new ArrayList<>();

  SparseGenerator(DemoData.Options o) {
    Random rnd = new Random(DemoData.mix(o.seed(), 3));
    int fields = o.fields();
    vocab = new int[fields];
    weights = new double[fields][];
    // the logit's standard deviation is about 3.5 whatever the field count
    double sigma = 3.5 / Math.sqrt(fields);
    for (int f = 0; f < fields; f++) {
      vocab[f] = 3 + rnd.nextInt(298); // 3..300 values per field
      weights[f] = new double[vocab[f]];
      for (int v = 0; v < vocab[f]; v++) {
        weights[f][v] = rnd.nextGaussian() * sigma;
      }
    }
    mask = (1L << o.hashBits()) - 1;
    salt = DemoData.mix(o.seed(), 4);
    for (int f = 0; f < fields; f++) {
      Map<Long, Double> m = new HashMap<>();
      for (int v = 0; v < vocab[f]; v++) {
        m.putIfAbsent(id(f, v), weights[f][v]);
      }
      weightById.add(m);
    }
  }

  @Override
  public Example next(Random rnd) {
    Example.Builder b = Example.newBuilder();
    double logit = BIAS;
    for (int f = 0; f < vocab.length; f++) {
      double u = rnd.nextDouble();
      int v = (int) (vocab[f] * u * u); // skewed: small values are frequent, like real categories
      logit += weights[f][v];
      b.addSparseIds(id(f, v)).addSparseValues(1.0f);
    }
    double p = 1 / (1 + Math.exp(-logit));
    return b.setLabel(rnd.nextDouble() < p ? 1 : 0).build();
  }

  /** Predicts with the hidden model; ids map back to (field, value) by position. */
  @Override
  public int oraclePredict(Example e) {
    double logit = BIAS;
    for (int f = 0; f < vocab.length; f++) {
      logit += weightById.get(f).getOrDefault(e.getSparseIds(f), 0.0);
    }
    return logit > 0 ? 1 : 0;
  }

  @Override
  public long features() {
    return mask + 1;
  }

  private long id(int field, int value) {
    return DemoData.mix(salt, ((long) field << 32) | value) & mask;
  }
}
