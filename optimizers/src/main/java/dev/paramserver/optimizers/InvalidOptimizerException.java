package dev.paramserver.optimizers;

/**
 * An optimizer configuration (update rule or learning-rate schedule) that cannot be used. The
 * message names the parameter and the bad field, for example "parameter 'fc1.w' optimizer SGD needs
 * learning_rate > 0, got -1.0"; a service passes it on as is, as the reason BAD_OPTIMIZER.
 */
public final class InvalidOptimizerException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public InvalidOptimizerException(String message) {
    super(message);
  }
}
