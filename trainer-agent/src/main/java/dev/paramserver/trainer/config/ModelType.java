package dev.paramserver.trainer.config;

import java.util.Locale;

/** The built-in models ({@code paramserver.trainer.model}). */
public enum ModelType {
  /** Multinomial logistic regression. */
  SOFTMAX,
  /** A multi-layer perceptron ({@code paramserver.trainer.hidden} sets its layers). */
  MLP,
  /** Sparse logistic regression over hashed ids, with an optional embedding part. */
  SPARSE_LR;

  /** The model's name as the models library and model files spell it: softmax, mlp, sparse-lr. */
  public String id() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
