package dev.paramserver.trainer.config;

import jakarta.validation.Valid;
import jakarta.validation.constraints.DecimalMax;
import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * How the gradients become updates ({@code paramserver.trainer.*}, the keys below only). The
 * trainer that initialises the pservers sends these settings with every parameter; the pservers
 * apply them. Settings that do not apply to the chosen optimizer are ignored.
 *
 * @param optimizer the update rule of the dense parameters (and of sparse tables unless {@code
 *     sparse.optimizer} is set): sgd, momentum, nesterov, adam, adamw, adagrad, rmsprop or adadelta
 * @param learningRate base learning rate
 * @param momentum SGD momentum (0 = plain SGD; momentum and nesterov use 0.9 when it is 0)
 * @param weightDecay L2 weight decay coefficient (adamw: decoupled decay)
 * @param accumulate mini-batches whose gradients are summed (and averaged) before one push
 * @param beta1 adam, adamw: decay of the first moment, in [0, 1)
 * @param beta2 adam, adamw: decay of the second moment, in [0, 1)
 * @param epsilon adam, adamw, adagrad, rmsprop, adadelta: numerical stabiliser (default 1e-8,
 *     adadelta 1e-6)
 * @param rho rmsprop, adadelta: decay of the squared-gradient average, in [0, 1) (default 0.9,
 *     adadelta 0.95)
 * @param initialAccumulator adagrad: initial value of the squared-gradient sum
 * @param clipValue clip each gradient element to [-clip-value, clip-value] (0 = off)
 * @param clipNorm rescale each block's gradient so its L2 norm is at most clip-norm (0 = off)
 * @param lrSchedule learning-rate schedule over a block's update count t: constant, step,
 *     exponential, warmup-cosine or warmup-linear
 * @param lrStepSize step: updates between two decays (> 0)
 * @param lrGamma step, exponential: decay factor (> 0)
 * @param lrWarmupSteps warmup-cosine, warmup-linear: updates of linear warm-up from 0
 * @param lrTotalSteps warmup-cosine, warmup-linear: update count at which the decay reaches lr-min
 *     (> lr-warmup-steps)
 * @param lrMin warmup-cosine, warmup-linear: the final learning rate (0 to learning-rate)
 * @param sparse the optimizer of sparse tables (embeddings); each unset key takes the dense value
 */
@Validated
@ConfigurationProperties("paramserver.trainer")
public record OptimizerProperties(
    @DefaultValue("sgd") OptimizerKind optimizer,
    @DefaultValue("0.1") @DecimalMin(value = "0", inclusive = false) float learningRate,
    @DefaultValue("0") @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) float momentum,
    @DefaultValue("0") @DecimalMin("0") float weightDecay,
    @DefaultValue("1") @Min(1) @Max(1024) int accumulate,
    @DefaultValue("0.9") @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) float beta1,
    @DefaultValue("0.999") @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) float beta2,
    @DecimalMin(value = "0", inclusive = false) Float epsilon,
    @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) Float rho,
    @DefaultValue("0") @DecimalMin("0") float initialAccumulator,
    @DefaultValue("0") @DecimalMin("0") float clipValue,
    @DefaultValue("0") @DecimalMin("0") float clipNorm,
    @DefaultValue("constant") LrScheduleKind lrSchedule,
    @DefaultValue("0") @Min(0) long lrStepSize,
    @DefaultValue("0.1") @DecimalMin(value = "0", inclusive = false) float lrGamma,
    @DefaultValue("0") @Min(0) long lrWarmupSteps,
    @DefaultValue("0") @Min(0) long lrTotalSteps,
    @DefaultValue("0") @DecimalMin("0") float lrMin,
    @DefaultValue @Valid Sparse sparse) {

  public OptimizerProperties {
    if (lrSchedule == LrScheduleKind.STEP && lrStepSize <= 0) {
      throw new IllegalArgumentException(
          "paramserver.trainer.lr-schedule=step needs paramserver.trainer.lr-step-size > 0, got "
              + lrStepSize);
    }
    if ((lrSchedule == LrScheduleKind.WARMUP_COSINE || lrSchedule == LrScheduleKind.WARMUP_LINEAR)
        && lrTotalSteps <= lrWarmupSteps) {
      throw new IllegalArgumentException(
          "paramserver.trainer.lr-schedule="
              + lrSchedule.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-')
              + " needs paramserver.trainer.lr-total-steps > paramserver.trainer.lr-warmup-steps,"
              + " got lr-total-steps="
              + lrTotalSteps
              + " lr-warmup-steps="
              + lrWarmupSteps);
    }
    if (lrMin > learningRate) {
      throw new IllegalArgumentException(
          "paramserver.trainer.lr-min must be at most paramserver.trainer.learning-rate ("
              + learningRate
              + "), got "
              + lrMin);
    }
    if (sparse == null) {
      sparse = Sparse.SAME;
    }
  }

  /** The settings of the dense optimizer with defaults for everything else: tests and tools. */
  public static OptimizerProperties of(
      OptimizerKind optimizer, float learningRate, float momentum, float weightDecay) {
    return new OptimizerProperties(
        optimizer,
        learningRate,
        momentum,
        weightDecay,
        1,
        0.9f,
        0.999f,
        null,
        null,
        0f,
        0f,
        0f,
        LrScheduleKind.CONSTANT,
        0,
        0.1f,
        0,
        0,
        0f,
        Sparse.SAME);
  }

  /**
   * The optimizer of sparse tables ({@code paramserver.trainer.sparse.*}). Every key left unset
   * takes the value of the dense key of the same name; the learning-rate schedule is the dense one.
   * Adagrad on embeddings with Adam on the dense layers is a common choice: {@code
   * paramserver.trainer.optimizer=adam}, {@code paramserver.trainer.sparse.optimizer=adagrad},
   * {@code paramserver.trainer.sparse.learning-rate=0.05}.
   *
   * @param optimizer the update rule of sparse tables (unset: paramserver.trainer.optimizer)
   * @param learningRate base learning rate of sparse tables
   * @param momentum SGD momentum of sparse tables
   * @param weightDecay L2 weight decay of sparse tables
   * @param beta1 adam, adamw: first-moment decay of sparse tables
   * @param beta2 adam, adamw: second-moment decay of sparse tables
   * @param epsilon numerical stabiliser of sparse tables
   * @param rho rmsprop, adadelta: decay of sparse tables
   * @param initialAccumulator adagrad: initial accumulator of sparse tables
   * @param clipValue element-wise gradient clipping of sparse tables (0 = off)
   * @param clipNorm per-row-batch L2 norm clipping of sparse tables (0 = off)
   */
  public record Sparse(
      OptimizerKind optimizer,
      @DecimalMin(value = "0", inclusive = false) Float learningRate,
      @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) Float momentum,
      @DecimalMin("0") Float weightDecay,
      @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) Float beta1,
      @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) Float beta2,
      @DecimalMin(value = "0", inclusive = false) Float epsilon,
      @DecimalMin("0") @DecimalMax(value = "1", inclusive = false) Float rho,
      @DecimalMin("0") Float initialAccumulator,
      @DecimalMin("0") Float clipValue,
      @DecimalMin("0") Float clipNorm) {

    /** Nothing set: sparse tables use the dense optimizer. */
    public static final Sparse SAME =
        new Sparse(null, null, null, null, null, null, null, null, null, null, null);
  }
}
