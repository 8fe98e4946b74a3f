package dev.paramserver.serving.replica;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.models.Batch;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.ShardPlacement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Predictions of the served model, computed as {@code psctl predict} computes them for a model
 * file: the examples make one {@link Batch}, the model's standardization (if any) is applied
 * ({@link ModelFiles.Loaded#prepare}), and {@link Model#predict} runs on the parameters of one
 * version: every dense parameter, and the rows of each sparse table the examples name. A row the
 * table does not hold is left out, so the model reads it as zeros, as it reads a row a model file
 * does not hold.
 */
public final class Predictions {
  /** What one Predict answers: {@code classes} probabilities per example, and the best class. */
  public record Answer(
      ServedVersion version, int classes, float[] probabilities, int[] predicted) {}

  private final ServedModel model;
  private final Supplier<ModelFiles.Loaded> description;
  private final int maxExamples;

  /**
   * @param description the model's type, configuration, label names and standardization, with no
   *     parameters (a model file without them); throws a ServiceException when it is not known
   */
  public Predictions(ServedModel model, Supplier<ModelFiles.Loaded> description, int maxExamples) {
    this.model = model;
    this.description = description;
    this.maxExamples = maxExamples;
  }

  /**
   * The model's predictions for {@code examples} (raw features) on one version at least {@code
   * min}.
   *
   * @throws ServiceException TOO_LARGE (too many examples), BAD_ARGUMENT (an example that does not
   *     fit the model), NO_MODEL (the model's description is not known), or as {@link
   *     ServedModel#read}
   */
  public Answer predict(List<Example> examples, ServedVersion.Minimum min, Duration wait) {
    if (examples.size() > maxExamples) {
      throw new ServiceException(
          ErrorReason.TOO_LARGE,
          "a prediction takes at most "
              + maxExamples
              + " examples (paramserver.serving.max-examples), got "
              + examples.size()
              + ": split it");
    }
    ModelFiles.Loaded loaded = description.get();
    Model m = loaded.model();
    Batch batch;
    try {
      batch = Batch.of(examples, m.features());
    } catch (IllegalArgumentException e) {
      throw new ServiceException(ErrorReason.BAD_ARGUMENT, e.getMessage());
    }
    loaded.prepare(batch);
    Parameters params = Parameters.zerosLike(m);
    ServedVersion version = model.read(min, wait, view -> fill(view, m, batch, params));
    float[] probs = m.predict(params, batch);
    int k = m.classes();
    int[] predicted = new int[batch.size()];
    for (int i = 0; i < predicted.length; i++) {
      int best = 0;
      for (int j = 1; j < k; j++) {
        if (probs[i * k + j] > probs[i * k + best]) {
          best = j;
        }
      }
      predicted[i] = best;
    }
    return new Answer(version, k, probs, predicted);
  }

  /** Copies what the batch needs of the version {@code view} holds into {@code params}. */
  private static ServedVersion fill(View view, Model m, Batch batch, Parameters params) {
    Map<String, ParameterSpec> served = view.parameters();
    for (ParameterDef def : m.parameters()) {
      ParameterSpec spec = served.get(def.name());
      if (spec == null || spec.getSparse() != def.sparse()) {
        throw new ServiceException(
            ErrorReason.MODEL_MISMATCH,
            "the "
                + m.type()
                + " model has "
                + (def.sparse() ? "sparse table '" : "dense parameter '")
                + def.name()
                + "', which the served job does not hold: the job's model description does not"
                + " match its parameters");
      }
      if (!def.sparse()) {
        float[] values = view.dense(spec);
        float[] dst = params.dense(def.name());
        if (values.length != dst.length) {
          throw new ServiceException(
              ErrorReason.MODEL_MISMATCH,
              "dense parameter '"
                  + def.name()
                  + "' holds "
                  + values.length
                  + " values, the model expects "
                  + dst.length);
        }
        System.arraycopy(values, 0, dst, 0, dst.length);
        continue;
      }
      Parameters.SparseTable table = params.sparse(def.name());
      int width = view.width(def.name());
      if (width != table.width()) {
        throw new ServiceException(
            ErrorReason.MODEL_MISMATCH,
            "sparse table '"
                + def.name()
                + "' has rows of "
                + width
                + " values, the model expects "
                + table.width());
      }
      long hash = ShardPlacement.tableHash(def.name());
      float[] row = new float[width];
      for (long id : batch.sparseIds()) {
        if (!table.contains(id) && view.row(def.name(), hash, id, row, 0)) {
          table.put(id, row.clone());
        }
      }
    }
    return view.version();
  }
}
