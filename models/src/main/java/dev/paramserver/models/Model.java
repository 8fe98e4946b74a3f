package dev.paramserver.models;

import java.util.List;

/**
 * A model in plain Java: its named parameters, and forward/backward on a batch.
 *
 * <p>To add a model: implement this interface (parameters are flat float arrays in {@link
 * Parameters}, row-major), compute the mean loss over the batch and write the gradient of that mean
 * loss into {@code grads} (same names and sizes as the parameters; dense gradients start at zero),
 * then register a factory in {@link ModelFactory}. Check the gradients against finite differences
 * with {@code GradientCheck} in the tests.
 */
public interface Model {

  /** The type name, for example "softmax". */
  String type();

  /** Number of classes predicted (2 for binary models). */
  int classes();

  /** Number of dense input features. */
  int features();

  /** The model's parameters, in a fixed order. */
  List<ParameterDef> parameters();

  /**
   * Forward and backward pass on a batch.
   *
   * @param params current parameter values
   * @param batch the examples
   * @param grads receives the gradient of the mean loss (dense arrays are zeroed by the caller;
   *     sparse rows are created on demand)
   * @return the mean loss and the count of correct predictions
   */
  StepResult trainStep(Parameters params, Batch batch, Parameters grads);

  /**
   * As {@link #trainStep(Parameters, Batch, Parameters)}, with the batch's sparse rows resolved
   * once: the model reads them from {@code rows} by batch-local index and adds their gradients into
   * {@code rows}' flat accumulators, leaving {@code grads}' sparse tables alone. A model without
   * sparse tables trains as the other form does.
   *
   * @throws UnsupportedOperationException for a model with sparse tables that does not read them
   *     this way
   */
  default StepResult trainStep(Parameters params, Batch batch, BatchRows rows, Parameters grads) {
    for (ParameterDef d : parameters()) {
      if (d.sparse()) {
        throw new UnsupportedOperationException(
            "model '" + type() + "' does not read its sparse rows by batch-local index");
      }
    }
    return trainStep(params, batch, grads);
  }

  /**
   * Class probabilities for each example, row-major {@code batch.size() x classes()}.
   *
   * @param params current parameter values (sparse rows the batch touches must be present or they
   *     are treated as zero)
   */
  float[] predict(Parameters params, Batch batch);

  /** Mean loss and correct predictions of one step. */
  record StepResult(double loss, int correct, int size) {}
}
