package dev.paramserver.models;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.FeatureScaling;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StandardizationTest {

  private static Example ex(float... dense) {
    Example.Builder b = Example.newBuilder();
    for (float v : dense) {
      b.addDense(v);
    }
    return b.build();
  }

  @Test
  void accumulator_computesMeanAndPopulationStd_constantFeatureGetsScaleOne() {
    Standardization.Accumulator acc = new Standardization.Accumulator();
    acc.add(ex(1000, 5));
    acc.add(ex(3000, 5));
    acc.add(ex(5000, 5));
    Standardization s = acc.result();
    assertThat(s.mean(0)).isEqualTo(3000f);
    assertThat(s.scale(0)).isCloseTo((float) Math.sqrt(8e6 / 3), within(1e-2f));
    assertThat(s.mean(1)).isEqualTo(5f);
    assertThat(s.scale(1)).isEqualTo(1f);
  }

  @Test
  void apply_centresAndScalesTheBatchInPlace() {
    Standardization s =
        Standardization.fromProto(
            FeatureScaling.newBuilder().addMean(10).addMean(0).addScale(2).addScale(4).build());
    Batch b = Batch.of(List.of(ex(12, 8), ex(10, -4)), 2);
    s.apply(b);
    assertThat(b.dense()).containsExactly(1f, 2f, 0f, -1f);
  }

  @Test
  void fromProto_rejectsMismatchedOrNonPositiveScales() {
    assertThatThrownBy(
            () -> Standardization.fromProto(FeatureScaling.newBuilder().addMean(1).build()))
        .hasMessageContaining("1 means but 0 scales");
    assertThatThrownBy(
            () ->
                Standardization.fromProto(
                    FeatureScaling.newBuilder().addMean(1).addScale(0).build()))
        .hasMessageContaining("feature 0")
        .hasMessageContaining("> 0");
  }

  @Test
  void modelFile_carriesLabelNamesAndScaling(@TempDir Path dir) throws IOException {
    ModelSpec spec = ModelSpec.softmax(2, 3);
    Model m = ModelFactory.create(spec);
    FeatureScaling fs =
        FeatureScaling.newBuilder().addMean(5).addMean(6).addScale(2).addScale(3).build();
    DatasetInfo info =
        DatasetInfo.newBuilder()
            .addAllLabelNames(List.of("setosa", "versicolor", "virginica"))
            .setFeatureScaling(fs)
            .build();
    Path file = dir.resolve("model.pb");
    ModelFiles.write(file, spec, m, Initializers.initial(m, 1), "j", info);
    ModelFiles.Loaded back = ModelFiles.read(file);
    assertThat(back.labelNames()).containsExactly("setosa", "versicolor", "virginica");
    assertThat(back.className(2)).isEqualTo("virginica");
    assertThat(back.standardization()).isPresent();
    assertThat(back.standardization().get().toProto()).isEqualTo(fs);

    ModelFiles.write(file, spec, m, Initializers.initial(m, 1), "j");
    ModelFiles.Loaded plain = ModelFiles.read(file);
    assertThat(plain.labelNames()).isEmpty();
    assertThat(plain.className(2)).isEqualTo("2");
    assertThat(plain.standardization()).isEmpty();
  }

  @Test
  void modelFile_scalingOfTheWrongWidthIsAClearError(@TempDir Path dir) throws IOException {
    ModelSpec spec = ModelSpec.softmax(2, 3);
    Model m = ModelFactory.create(spec);
    DatasetInfo info =
        DatasetInfo.newBuilder()
            .setFeatureScaling(FeatureScaling.newBuilder().addMean(1).addScale(1))
            .build();
    Path file = dir.resolve("model.pb");
    ModelFiles.write(file, spec, m, Initializers.initial(m, 1), "j", info);
    assertThatThrownBy(() -> ModelFiles.read(file))
        .hasMessageContaining("feature scaling covers 1 features, the model has 2");
  }

  @Test
  void datasetInfo_isFoundFromShardAndSingleFileNames(@TempDir Path dir) throws IOException {
    assertThat(DatasetInfos.forPrefix(dir + "/iris")).isEqualTo(dir.resolve("iris.dataset.pb"));
    assertThat(DatasetInfos.forPrefix(dir + "/one.recordio"))
        .isEqualTo(dir.resolve("one.dataset.pb"));
    assertThat(DatasetInfos.forDataFile(dir.resolve("iris-00003.recordio")))
        .isEqualTo(dir.resolve("iris.dataset.pb"));
    assertThat(DatasetInfos.forDataFile(dir.resolve("one.recordio")))
        .isEqualTo(dir.resolve("one.dataset.pb"));
    assertThat(DatasetInfos.forDataLocation("s3://b/data/iris-00003.recordio"))
        .isEqualTo("s3://b/data/iris.dataset.pb");
    assertThat(DatasetInfos.forDataLocation("s3://b/one.recordio"))
        .isEqualTo("s3://b/one.dataset.pb");

    DatasetInfo a = DatasetInfo.newBuilder().addLabelNames("a").addLabelNames("b").build();
    DatasetInfos.write(dir.resolve("iris.dataset.pb"), a);
    Files.createFile(dir.resolve("iris-00000.recordio"));
    Files.createFile(dir.resolve("iris-00001.recordio"));
    Files.createFile(dir.resolve("other.recordio"));
    assertThat(
            DatasetInfos.find(
                List.of(dir.resolve("iris-00000.recordio"), dir.resolve("other.recordio"))))
        .contains(a);
    assertThat(DatasetInfos.find(List.of(dir.resolve("other.recordio")))).isEmpty();

    DatasetInfos.write(dir.resolve("other.dataset.pb"), DatasetInfo.getDefaultInstance());
    assertThatThrownBy(
            () ->
                DatasetInfos.find(
                    List.of(dir.resolve("iris-00000.recordio"), dir.resolve("other.recordio"))))
        .hasMessageContaining("different label names or feature scaling");
  }
}
