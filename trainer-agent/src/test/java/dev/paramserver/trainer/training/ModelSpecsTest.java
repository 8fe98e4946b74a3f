package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.ModelProperties;
import dev.paramserver.trainer.config.ModelType;
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
            new ModelProperties(
                ModelType.SOFTMAX, 0, 0, List.of(), Mlp.Activation.RELU, 0, null, null, null),
            data(dir.resolve("train-*.recordio").toString()),
            List.of());
    assertThat(spec.features()).isEqualTo(2);
    assertThat(spec.classes()).isEqualTo(2);
  }

  @Test
  void sizesSet_areKept() throws Exception {
    ModelSpec spec =
        ModelSpecs.of(
            new ModelProperties(
                ModelType.MLP, 5, 3, List.of(4), Mlp.Activation.TANH, 0, null, null, null),
            data("/none/*.recordio"),
            List.of());
    assertThat(spec.features()).isEqualTo(5);
    assertThat(spec.classes()).isEqualTo(3);
    assertThat(spec.hidden()).containsExactly(4);
  }

  @Test
  void absolute_resolvesRelativeGlobsFromTheWorkingDirectory() {
    assertThat(ModelSpecs.absolute(List.of("/a/*.rio", "b/*.rio")))
        .containsExactly("/a/*.rio", Path.of("").toAbsolutePath().resolve("b/*.rio").toString());
  }
}
