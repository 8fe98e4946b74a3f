package dev.paramserver.models;

import java.util.ArrayList;
import java.util.List;

/**
 * A multi-layer perceptron with a softmax output and cross-entropy loss. With no hidden layers it
 * is softmax (multinomial logistic) regression. Parameters: {@code hidden<i>.w} ({@code in x out})
 * and {@code hidden<i>.b} for each hidden layer i = 1.., then {@code out.w} and {@code out.b}.
 */
public final class Mlp implements Model {
  /** Hidden-layer activation. */
  public enum Activation {
    RELU,
    TANH
  }

  private final String type;
  private final int features;
  private final int classes;
  private final int[] sizes; // features, hidden..., classes
  private final Activation activation;
  private final List<ParameterDef> params = new ArrayList<>();

  public Mlp(String type, int features, int classes, List<Integer> hidden, Activation activation) {
    if (features <= 0 || classes < 2) {
      throw new IllegalArgumentException(
          type + " needs features > 0 and classes >= 2, got " + features + " and " + classes);
    }
    this.type = type;
    this.features = features;
    this.classes = classes;
    this.activation = activation;
    sizes = new int[hidden.size() + 2];
    sizes[0] = features;
    for (int i = 0; i < hidden.size(); i++) {
      if (hidden.get(i) <= 0) {
        throw new IllegalArgumentException("hidden layer sizes must be > 0, got " + hidden);
      }
      sizes[i + 1] = hidden.get(i);
    }
    sizes[sizes.length - 1] = classes;
    for (int l = 1; l < sizes.length; l++) {
      int in = sizes[l - 1];
      int out = sizes[l];
      boolean last = l == sizes.length - 1;
      ParameterDef.Init init;
      if (hidden.isEmpty()) {
        init = new ParameterDef.Zeros();
      } else if (!last && activation == Activation.RELU) {
        init = new ParameterDef.Normal((float) Math.sqrt(2.0 / in)); // He
      } else {
        init = new ParameterDef.Uniform((float) Math.sqrt(6.0 / (in + out))); // Xavier
      }
      params.add(ParameterDef.dense(weightName(l), List.of((long) in, (long) out), init));
      params.add(ParameterDef.dense(biasName(l), List.of((long) out), new ParameterDef.Zeros()));
    }
  }

  /** Softmax regression: no hidden layer. */
  public static Mlp softmax(int features, int classes) {
    return new Mlp("softmax", features, classes, List.of(), Activation.RELU);
  }

  private String layerName(int l) {
    return l == sizes.length - 1 ? "out" : "hidden" + l;
  }

  private String weightName(int l) {
    return layerName(l) + ".w";
  }

  private String biasName(int l) {
    return layerName(l) + ".b";
  }

  @Override
  public String type() {
    return type;
  }

  @Override
  public int classes() {
    return classes;
  }

  @Override
  public int features() {
    return features;
  }

  @Override
  public List<ParameterDef> parameters() {
    return params;
  }

  /** Activations of every layer for the batch; the last one holds the softmax probabilities. */
  private float[][] forward(Parameters p, Batch batch) {
    int n = batch.size();
    float[][] acts = new float[sizes.length][];
    acts[0] = batch.dense();
    for (int l = 1; l < sizes.length; l++) {
      int in = sizes[l - 1];
      int out = sizes[l];
      float[] w = p.dense(weightName(l));
      float[] b = p.dense(biasName(l));
      float[] a = acts[l - 1];
      float[] z = new float[n * out];
      for (int i = 0; i < n; i++) {
        int zo = i * out;
        System.arraycopy(b, 0, z, zo, out);
        for (int k = 0; k < in; k++) {
          float x = a[i * in + k];
          if (x == 0f) {
            continue;
          }
          int wo = k * out;
          for (int j = 0; j < out; j++) {
            z[zo + j] += x * w[wo + j];
          }
        }
      }
      if (l < sizes.length - 1) {
        activate(z);
      } else {
        softmaxRows(z, n, out);
      }
      acts[l] = z;
    }
    return acts;
  }

  private void activate(float[] z) {
    if (activation == Activation.RELU) {
      for (int i = 0; i < z.length; i++) {
        z[i] = Math.max(0f, z[i]);
      }
    } else {
      for (int i = 0; i < z.length; i++) {
        z[i] = (float) Math.tanh(z[i]);
      }
    }
  }

  static void softmaxRows(float[] z, int n, int k) {
    for (int i = 0; i < n; i++) {
      int o = i * k;
      float max = Float.NEGATIVE_INFINITY;
      for (int j = 0; j < k; j++) {
        max = Math.max(max, z[o + j]);
      }
      double sum = 0;
      for (int j = 0; j < k; j++) {
        float e = (float) Math.exp(z[o + j] - max);
        z[o + j] = e;
        sum += e;
      }
      float inv = (float) (1.0 / sum);
      for (int j = 0; j < k; j++) {
        z[o + j] *= inv;
      }
    }
  }

  @Override
  public float[] predict(Parameters params, Batch batch) {
    float[][] acts = forward(params, batch);
    return acts[acts.length - 1];
  }

  @Override
  public StepResult trainStep(Parameters params, Batch batch, Parameters grads) {
    int n = batch.size();
    float[][] acts = forward(params, batch);
    int last = sizes.length - 1;
    float[] probs = acts[last];
    int[] labels = batch.labels();
    double loss = 0;
    int correct = 0;
    float[] delta = new float[n * classes];
    float invN = 1f / n;
    for (int i = 0; i < n; i++) {
      int y = labels[i];
      if (y < 0 || y >= classes) {
        throw new IllegalArgumentException(
            "label " + y + " is out of range for " + classes + " classes");
      }
      int o = i * classes;
      loss -= Math.log(Math.max(probs[o + y], 1e-12f));
      int best = 0;
      for (int j = 0; j < classes; j++) {
        delta[o + j] = probs[o + j] * invN;
        if (probs[o + j] > probs[o + best]) {
          best = j;
        }
      }
      delta[o + y] -= invN;
      if (best == y) {
        correct++;
      }
    }
    for (int l = last; l >= 1; l--) {
      int in = sizes[l - 1];
      int out = sizes[l];
      float[] a = acts[l - 1];
      float[] gw = grads.dense(weightName(l));
      float[] gb = grads.dense(biasName(l));
      for (int i = 0; i < n; i++) {
        int d = i * out;
        for (int j = 0; j < out; j++) {
          gb[j] += delta[d + j];
        }
        for (int k = 0; k < in; k++) {
          float x = a[i * in + k];
          if (x == 0f) {
            continue;
          }
          int wo = k * out;
          for (int j = 0; j < out; j++) {
            gw[wo + j] += x * delta[d + j];
          }
        }
      }
      if (l > 1) {
        float[] w = params.dense(weightName(l));
        float[] prev = new float[n * in];
        for (int i = 0; i < n; i++) {
          int d = i * out;
          for (int k = 0; k < in; k++) {
            int wo = k * out;
            float s = 0f;
            for (int j = 0; j < out; j++) {
              s += w[wo + j] * delta[d + j];
            }
            float act = a[i * in + k];
            // derivative of the activation, from its output
            float deriv = activation == Activation.RELU ? (act > 0f ? 1f : 0f) : 1f - act * act;
            prev[i * in + k] = s * deriv;
          }
        }
        delta = prev;
      }
    }
    return new StepResult(loss / n, correct, n);
  }
}
