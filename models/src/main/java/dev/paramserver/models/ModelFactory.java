package dev.paramserver.models;

import java.util.List;

/** Builds the built-in models by type name. */
public final class ModelFactory {
  private ModelFactory() {}

  /** The type names this factory knows. */
  public static final List<String> TYPES = List.of("softmax", "mlp", "sparse-lr");

  public static Model create(ModelSpec spec) {
    return switch (spec.type()) {
      case "softmax" -> Mlp.softmax(spec.features(), spec.classes());
      case "mlp" -> {
        if (spec.hidden().isEmpty()) {
          throw new IllegalArgumentException(
              "model 'mlp' needs at least one hidden layer (for example --hidden 128,64)");
        }
        yield new Mlp("mlp", spec.features(), spec.classes(), spec.hidden(), spec.activation());
      }
      case "sparse-lr" -> new SparseLogisticRegression(spec.features(), spec.embeddingWidth());
      default ->
          throw new IllegalArgumentException(
              "unknown model '" + spec.type() + "': choose one of " + TYPES);
    };
  }
}
