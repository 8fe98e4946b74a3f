package dev.paramserver.models;

import java.util.ArrayList;
import java.util.List;

/**
 * Logistic regression over hashed sparse features, with an optional embedding part, for
 * click-through-style data (two classes). The score of example i is
 *
 * <pre>
 *   z = bias + dense.w · x_dense + Σ_k wide[id_k] v_k + out · Σ_k emb[id_k] v_k
 * </pre>
 *
 * where {@code wide} (width 1) and {@code emb} (width {@code embeddingWidth}, when > 0) are sparse
 * tables whose rows are created on first use, and p(class 1) = sigmoid(z).
 */
public final class SparseLogisticRegression implements Model {
  public static final String WIDE = "wide";
  public static final String EMB = "emb";
  public static final String EMB_OUT = "emb.out";
  public static final String DENSE_W = "dense.w";
  public static final String BIAS = "bias";

  private final int features;
  private final int embeddingWidth;
  private final List<ParameterDef> params = new ArrayList<>();

  public SparseLogisticRegression(int features, int embeddingWidth) {
    if (features < 0 || embeddingWidth < 0) {
      throw new IllegalArgumentException(
          "sparse-lr needs features >= 0 and embedding width >= 0, got "
              + features
              + " and "
              + embeddingWidth);
    }
    this.features = features;
    this.embeddingWidth = embeddingWidth;
    params.add(ParameterDef.dense(BIAS, List.of(1L), new ParameterDef.Zeros()));
    if (features > 0) {
      params.add(ParameterDef.dense(DENSE_W, List.of((long) features), new ParameterDef.Zeros()));
    }
    params.add(ParameterDef.sparseTable(WIDE, 1, 0f));
    if (embeddingWidth > 0) {
      params.add(ParameterDef.sparseTable(EMB, embeddingWidth, 0.01f));
      params.add(
          ParameterDef.dense(
              EMB_OUT,
              List.of((long) embeddingWidth),
              new ParameterDef.Uniform((float) Math.sqrt(6.0 / (embeddingWidth + 1)))));
    }
  }

  @Override
  public String type() {
    return "sparse-lr";
  }

  @Override
  public int classes() {
    return 2;
  }

  @Override
  public int features() {
    return features;
  }

  @Override
  public List<ParameterDef> parameters() {
    return params;
  }

  /**
   * Scores z of every example; fills {@code pooled} (n x embeddingWidth) when there is an
   * embedding.
   */
  private float[] scores(Parameters p, Batch b, float[] pooled) {
    int n = b.size();
    float[] z = new float[n];
    float bias = p.dense(BIAS)[0];
    float[] dw = features > 0 ? p.dense(DENSE_W) : null;
    float[] out = embeddingWidth > 0 ? p.dense(EMB_OUT) : null;
    Parameters.SparseTable wide = p.sparse(WIDE);
    Parameters.SparseTable emb = embeddingWidth > 0 ? p.sparse(EMB) : null;
    int[] start = b.sparseStart();
    long[] ids = b.sparseIds();
    float[] vals = b.sparseValues();
    for (int i = 0; i < n; i++) {
      double s = denseScore(bias, dw, b, i);
      for (int k = start[i]; k < start[i + 1]; k++) {
        float[] w = wide.rowOrNull(ids[k]);
        if (w != null) {
          s += w[0] * vals[k];
        }
        if (emb != null) {
          pool(emb.rowOrNull(ids[k]), vals[k], pooled, i);
        }
      }
      z[i] = (float) pooledScore(s, out, pooled, i);
    }
    return z;
  }

  /** As {@link #scores}, the sparse rows read from {@code rows} by batch-local index. */
  private float[] scores(Parameters p, Batch b, BatchRows rows, float[] pooled) {
    int n = b.size();
    float[] z = new float[n];
    float bias = p.dense(BIAS)[0];
    float[] dw = features > 0 ? p.dense(DENSE_W) : null;
    float[] out = embeddingWidth > 0 ? p.dense(EMB_OUT) : null;
    float[][] wide = rows.table(WIDE).values();
    float[][] emb = embeddingWidth > 0 ? rows.table(EMB).values() : null;
    int[] start = b.sparseStart();
    int[] local = rows.local();
    float[] vals = b.sparseValues();
    for (int i = 0; i < n; i++) {
      double s = denseScore(bias, dw, b, i);
      for (int k = start[i]; k < start[i + 1]; k++) {
        float[] w = wide[local[k]];
        if (w != null) {
          s += w[0] * vals[k];
        }
        if (emb != null) {
          pool(emb[local[k]], vals[k], pooled, i);
        }
      }
      z[i] = (float) pooledScore(s, out, pooled, i);
    }
    return z;
  }

  /** The bias plus the dense features' part ({@code dw}, or null) of example {@code i}'s score. */
  private double denseScore(float bias, float[] dw, Batch b, int i) {
    double s = bias;
    if (dw != null) {
      for (int j = 0; j < features; j++) {
        s += dw[j] * b.dense()[i * features + j];
      }
    }
    return s;
  }

  /** Adds embedding row {@code e} (null: zeros) times {@code v} to example {@code i}'s pool. */
  private void pool(float[] e, float v, float[] pooled, int i) {
    if (e != null) {
      for (int d = 0; d < embeddingWidth; d++) {
        pooled[i * embeddingWidth + d] += e[d] * v;
      }
    }
  }

  /** Adds the embedding part of example {@code i}'s score, {@code out} (or null) times its pool. */
  private double pooledScore(double s, float[] out, float[] pooled, int i) {
    if (out == null) {
      return s;
    }
    for (int d = 0; d < embeddingWidth; d++) {
      s += out[d] * pooled[i * embeddingWidth + d];
    }
    return s;
  }

  private static float sigmoid(float z) {
    return (float) (1.0 / (1.0 + Math.exp(-z)));
  }

  @Override
  public float[] predict(Parameters params, Batch batch) {
    float[] pooled = new float[batch.size() * embeddingWidth];
    float[] z = scores(params, batch, pooled);
    float[] probs = new float[batch.size() * 2];
    for (int i = 0; i < z.length; i++) {
      float p = sigmoid(z[i]);
      probs[2 * i] = 1 - p;
      probs[2 * i + 1] = p;
    }
    return probs;
  }

  @Override
  public StepResult trainStep(Parameters params, Batch batch, Parameters grads) {
    int n = batch.size();
    float[] pooled = new float[n * embeddingWidth];
    Backward back = new Backward(params, batch, grads, pooled, scores(params, batch, pooled));
    Parameters.SparseTable gWide = grads.sparse(WIDE);
    Parameters.SparseTable gEmb = embeddingWidth > 0 ? grads.sparse(EMB) : null;
    int[] start = batch.sparseStart();
    long[] ids = batch.sparseIds();
    float[] vals = batch.sparseValues();
    for (int i = 0; i < n; i++) {
      float dz = back.example(i);
      for (int k = start[i]; k < start[i + 1]; k++) {
        gWide.row(ids[k])[0] += dz * vals[k];
        if (gEmb != null) {
          float[] ge = gEmb.row(ids[k]);
          for (int d = 0; d < embeddingWidth; d++) {
            ge[d] += dz * vals[k] * back.out[d];
          }
        }
      }
    }
    return back.result();
  }

  /**
   * As {@link #trainStep(Parameters, Batch, Parameters)}, reading the sparse rows from {@code rows}
   * and adding their gradients into its flat accumulators, by batch-local index: the same
   * arithmetic in the same order, so the same values bit for bit.
   */
  @Override
  public StepResult trainStep(Parameters params, Batch batch, BatchRows rows, Parameters grads) {
    int n = batch.size();
    float[] pooled = new float[n * embeddingWidth];
    Backward back = new Backward(params, batch, grads, pooled, scores(params, batch, rows, pooled));
    float[] gWide = rows.table(WIDE).grads();
    float[] gEmb = embeddingWidth > 0 ? rows.table(EMB).grads() : null;
    int[] start = batch.sparseStart();
    int[] local = rows.local();
    float[] vals = batch.sparseValues();
    int w = embeddingWidth;
    for (int i = 0; i < n; i++) {
      float dz = back.example(i);
      for (int k = start[i]; k < start[i + 1]; k++) {
        int at = local[k];
        gWide[at] += dz * vals[k];
        if (gEmb != null) {
          for (int d = 0; d < w; d++) {
            gEmb[at * w + d] += dz * vals[k] * back.out[d];
          }
        }
      }
    }
    return back.result();
  }

  /** The backward pass's part shared by both forms: loss, accuracy and the dense gradients. */
  private final class Backward {
    final Batch batch;
    final float[] z;
    final float[] pooled;
    final float[] gBias;
    final float[] gDense;
    final float[] gOut;
    final float[] out;
    final int n;
    double loss;
    int correct;

    Backward(Parameters params, Batch batch, Parameters grads, float[] pooled, float[] z) {
      this.batch = batch;
      this.z = z;
      this.pooled = pooled;
      this.n = batch.size();
      this.gBias = grads.dense(BIAS);
      this.gDense = features > 0 ? grads.dense(DENSE_W) : null;
      this.gOut = embeddingWidth > 0 ? grads.dense(EMB_OUT) : null;
      this.out = embeddingWidth > 0 ? params.dense(EMB_OUT) : new float[0];
    }

    /** Example {@code i}'s loss and dense gradients; returns its score's gradient dz. */
    float example(int i) {
      int y = batch.labels()[i];
      if (y != 0 && y != 1) {
        throw new IllegalArgumentException("sparse-lr needs labels 0 or 1, got " + y);
      }
      float p = sigmoid(z[i]);
      // log-loss computed stably from the score
      loss += Math.max(z[i], 0) - z[i] * y + Math.log1p(Math.exp(-Math.abs(z[i])));
      if ((p >= 0.5f ? 1 : 0) == y) {
        correct++;
      }
      float dz = (p - y) / n;
      gBias[0] += dz;
      if (gDense != null) {
        for (int j = 0; j < features; j++) {
          gDense[j] += dz * batch.dense()[i * features + j];
        }
      }
      if (gOut != null) {
        for (int d = 0; d < embeddingWidth; d++) {
          gOut[d] += dz * pooled[i * embeddingWidth + d];
        }
      }
      return dz;
    }

    StepResult result() {
      return new StepResult(loss / n, correct, n);
    }
  }
}
