package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.models.ModelSpec;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.ModelProperties;
import dev.paramserver.trainer.testing.TestData;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelSpecsTest {
  @TempDir Path dir;

  private DataProperties data(String glob) {
    return new DataProperties(List.of(glob), List.of(), 8, true);
  }

  @Test
  void sizesUnset_areReadFromTheFirstTrainingFile() throws Exception {
    TestData.write(dir.resolve("train-0.recordio"), 10, 5);
    ModelSpec spec =
        ModelSpecs.of(
            new ModelProperties("softmax", 0, 0, List.of(), "relu", 0, null, null),
            data(dir.resolve("train-*.recordio").toString()),
            List.of());
    assertThat(spec.features()).isEqualTo(2);
    assertThat(spec.classes()).isEqualTo(2);
  }

  @Test
  void sizesSet_areKept_andTheActivationIsParsed() throws Exception {
    ModelSpec spec =
        ModelSpecs.of(
            new ModelProperties("mlp", 5, 3, List.of(4), "TANH", 0, null, null),
            data("/none/*.recordio"),
            List.of());
    assertThat(spec.features()).isEqualTo(5);
    assertThat(spec.classes()).isEqualTo(3);
    assertThat(spec.hidden()).containsExactly(4);
  }

  @Test
  void unknownActivation_isRefused_namingTheProperty() {
    assertThatThrownBy(
            () ->
                ModelSpecs.of(
                    new ModelProperties("mlp", 5, 3, List.of(4), "sigmoid", 0, null, null),
                    data("/none/*.recordio"),
                    List.of()))
        .hasMessageContaining("paramserver.trainer.activation 'sigmoid'");
  }

  @Test
  void absolute_resolvesRelativeGlobsFromTheWorkingDirectory() {
    assertThat(ModelSpecs.absolute(List.of("/a/*.rio", "b/*.rio")))
        .containsExactly("/a/*.rio", Path.of("").toAbsolutePath().resolve("b/*.rio").toString());
  }
}
