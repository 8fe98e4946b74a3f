package dev.paramserver.models;

import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Loss, accuracy and (for binary models) AUC of a model on examples.
 *
 * @param loss mean cross-entropy
 * @param accuracy fraction of examples whose most probable class is the label
 * @param samples number of examples
 * @param auc area under the ROC curve for two classes, NaN otherwise
 */
public record Evaluation(double loss, double accuracy, long samples, double auc) {

  /** Evaluates in batches of {@code batchSize}. */
  public static Evaluation of(Model model, Parameters params, Dataset data, int batchSize) {
    return of(model, params, data, batchSize, b -> {});
  }

  /**
   * Evaluates in batches, calling {@code prepare} before each batch (for example to fetch the
   * sparse rows the batch touches).
   */
  public static Evaluation of(
      Model model, Parameters params, Dataset data, int batchSize, Consumer<Batch> prepare) {
    int k = model.classes();
    boolean binary = k == 2;
    float[] scores = binary ? new float[data.size()] : null;
    int[] labels = binary ? new int[data.size()] : null;
    double loss = 0;
    long correct = 0;
    int seen = 0;
    for (Batch b : data.batches(batchSize)) {
      prepare.accept(b);
      float[] probs = model.predict(params, b);
      for (int i = 0; i < b.size(); i++) {
        int y = b.labels()[i];
        int o = i * k;
        loss -= Math.log(Math.max(y >= 0 && y < k ? probs[o + y] : 0f, 1e-12f));
        int best = 0;
        for (int j = 1; j < k; j++) {
          if (probs[o + j] > probs[o + best]) {
            best = j;
          }
        }
        if (best == y) {
          correct++;
        }
        if (binary) {
          scores[seen] = probs[o + 1];
          labels[seen] = y;
        }
        seen++;
      }
    }
    if (seen == 0) {
      return new Evaluation(Double.NaN, Double.NaN, 0, Double.NaN);
    }
    return new Evaluation(
        loss / seen, (double) correct / seen, seen, binary ? auc(scores, labels) : Double.NaN);
  }

  /** Rank-based AUC (Mann-Whitney U), ties counted as one half. */
  static double auc(float[] scores, int[] labels) {
    int n = scores.length;
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Float.compare(scores[a], scores[b]));
    double rankSumPos = 0;
    long pos = 0;
    int i = 0;
    while (i < n) {
      int j = i;
      while (j + 1 < n && scores[order[j + 1]] == scores[order[i]]) {
        j++;
      }
      double avgRank = (i + j) / 2.0 + 1;
      for (int t = i; t <= j; t++) {
        if (labels[order[t]] == 1) {
          rankSumPos += avgRank;
          pos++;
        }
      }
      i = j + 1;
    }
    long neg = n - pos;
    if (pos == 0 || neg == 0) {
      return Double.NaN;
    }
    return (rankSumPos - pos * (pos + 1) / 2.0) / ((double) pos * neg);
  }
}
