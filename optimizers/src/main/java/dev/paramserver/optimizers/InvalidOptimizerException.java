package dev.paramserver.optimizers;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;

/**
 * An optimizer configuration (update rule or learning-rate schedule) that cannot be used, with the
 * reason BAD_OPTIMIZER: a service reports it as is. The message names the parameter and the bad
 * field, for example "parameter 'fc1.w' optimizer SGD needs learning_rate > 0, got -1.0".
 */
public final class InvalidOptimizerException extends ServiceException {
  private static final long serialVersionUID = 1L;

  public InvalidOptimizerException(String message) {
    super(ErrorReason.BAD_OPTIMIZER, message);
  }
}
