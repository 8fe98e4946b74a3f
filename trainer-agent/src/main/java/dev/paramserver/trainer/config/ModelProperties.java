package dev.paramserver.trainer.config;

import dev.paramserver.models.Mlp;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * The model trained ({@code paramserver.trainer.*}, the keys below only).
 *
 * @param model the model type: softmax, mlp or sparse-lr
 * @param features dense input features (0: read from the first training record)
 * @param classes number of classes (0: largest label of the test data, else of the first training
 *     file, plus one)
 * @param hidden hidden layer sizes of the mlp, for example 128,64
 * @param activation hidden activation of the mlp: relu or tanh
 * @param embeddingWidth sparse-lr: width of the embedding part (0 = wide part only)
 * @param modelOutput where the elected trainer writes the final model, a path or an {@code
 *     s3://bucket/key} URI (empty: not written)
 * @param onnxOutput where the elected trainer writes the final model as ONNX, as {@code psctl
 *     export --format onnx} does, a path or an {@code s3://bucket/key} URI (empty: not written)
 * @param initFrom warm start: a model file (as written to model-output; a path or an {@code
 *     s3://bucket/key} URI) whose values initialise the pservers instead of random values; it must
 *     describe the same model (type, sizes). Used only when the pservers start empty: pservers that
 *     restored a checkpoint keep it
 */
@Validated
@ConfigurationProperties("paramserver.trainer")
public record ModelProperties(
    @DefaultValue("softmax") ModelType model,
    @DefaultValue("0") @Min(0) int features,
    @DefaultValue("0") @Min(0) int classes,
    List<Integer> hidden,
    @DefaultValue("relu") Mlp.Activation activation,
    @DefaultValue("8") @Min(0) @Max(1024) int embeddingWidth,
    String modelOutput,
    String onnxOutput,
    String initFrom) {

  public ModelProperties {
    hidden = hidden == null ? List.of() : List.copyOf(hidden);
    initFrom = initFrom == null || initFrom.isBlank() ? null : initFrom;
  }
}
