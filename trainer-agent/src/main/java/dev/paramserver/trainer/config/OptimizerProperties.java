package dev.paramserver.trainer.config;

import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * How the gradients become updates ({@code paramserver.trainer.*}, the keys below only).
 *
 * @param optimizer sgd, momentum, nesterov, adam, adamw, adagrad, rmsprop or adadelta (applied by
 *     the pservers)
 * @param learningRate base learning rate
 * @param momentum SGD momentum (0 = plain SGD)
 * @param weightDecay L2 weight decay coefficient
 * @param accumulate mini-batches whose gradients are summed (and averaged) before one push
 */
@Validated
@ConfigurationProperties("paramserver.trainer")
public record OptimizerProperties(
    @DefaultValue("sgd") String optimizer,
    @DefaultValue("0.1") @DecimalMin(value = "0", inclusive = false) float learningRate,
    @DefaultValue("0") @DecimalMin("0") float momentum,
    @DefaultValue("0") @DecimalMin("0") float weightDecay,
    @DefaultValue("1") @Min(1) @Max(1024) int accumulate) {}
