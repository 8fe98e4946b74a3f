package dev.paramserver.trainer.testing;

import dev.paramserver.models.Mlp;
import dev.paramserver.trainer.config.AgentProperties;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.GradientDtype;
import dev.paramserver.trainer.config.ModelProperties;
import dev.paramserver.trainer.config.ModelType;
import dev.paramserver.trainer.config.OptimizerKind;
import dev.paramserver.trainer.config.OptimizerProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.config.TrainingModeSetting;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** Trainer settings for tests: a softmax over the {@link TestData} files, small batches. */
public final class TestProperties {
  private TestProperties() {}

  /**
   * @param modelOutput where to write the model, or null
   */
  public static TrainerProperties of(
      String trainGlob, String testGlob, boolean pipeline, Path modelOutput) {
    return of(trainGlob, testGlob, pipeline, modelOutput, null);
  }

  /**
   * @param modelOutput where to write the model, or null
   * @param onnxOutput where to write the model as ONNX, or null
   */
  public static TrainerProperties of(
      String trainGlob, String testGlob, boolean pipeline, Path modelOutput, Path onnxOutput) {
    return new TrainerProperties(
        new AgentProperties("t-test", 42, 1000, false, Duration.ZERO),
        new DataProperties(
            List.of(trainGlob), testGlob == null ? List.of() : List.of(testGlob), 4, true),
        new ModelProperties(
            ModelType.SOFTMAX,
            0,
            0,
            List.of(),
            Mlp.Activation.RELU,
            0,
            modelOutput == null ? null : modelOutput.toString(),
            onnxOutput == null ? null : onnxOutput.toString(),
            null),
        OptimizerProperties.of(OptimizerKind.SGD, 0.5f, 0, 0),
        new CommunicationProperties(
            false,
            2,
            GradientDtype.FLOAT32,
            pipeline,
            4,
            4,
            Duration.ofSeconds(5),
            Duration.ofMillis(50),
            TrainingModeSetting.ASYNC,
            0,
            CommunicationProperties.SparseRowSettings.defaults()));
  }
}
