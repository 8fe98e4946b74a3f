package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.FeatureScaling;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import dev.paramserver.testsupport.S3Server;
import dev.paramserver.trainer.config.DataProperties;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainingDataTest {
  @TempDir Path dir;
  private static final Storage LOCAL = Storage.create(S3Settings.defaults(), "test");

  private DataProperties data(String train, String test) {
    return new DataProperties(List.of(train), test == null ? List.of() : List.of(test), 64, true);
  }

  @Test
  void find_readsTheTrainingDatasetsInfo_orNoneForPlainData() throws Exception {
    Files.createFile(dir.resolve("tr-00000.recordio"));
    Files.createFile(dir.resolve("plain.recordio"));
    DatasetInfo info =
        DatasetInfo.newBuilder()
            .addLabelNames("a")
            .addLabelNames("b")
            .setFeatureScaling(FeatureScaling.newBuilder().addMean(1).addScale(2))
            .build();
    DatasetInfos.write(dir.resolve("tr.dataset.pb"), info);
    assertThat(TrainingData.find(data(dir + "/tr-*.recordio", null), LOCAL)).isEqualTo(info);
    assertThat(TrainingData.find(data(dir + "/plain.recordio", null), LOCAL))
        .isEqualTo(DatasetInfo.getDefaultInstance());
  }

  @Test
  void find_testDataNamingClassesOtherwise_isAClearError() throws Exception {
    Files.createFile(dir.resolve("tr.recordio"));
    Files.createFile(dir.resolve("te.recordio"));
    DatasetInfos.write(
        dir.resolve("tr.dataset.pb"),
        DatasetInfo.newBuilder().addLabelNames("a").addLabelNames("b").build());
    DatasetInfos.write(
        dir.resolve("te.dataset.pb"), DatasetInfo.newBuilder().addLabelNames("b").build());
    assertThatThrownBy(
            () -> TrainingData.find(data(dir + "/tr.recordio", dir + "/te.recordio"), LOCAL))
        .hasMessageContaining("the test data names its classes [b], the training data [a, b]")
        .hasMessageContaining("--statistics-from");
  }

  @Test
  void find_readsTheInfoObjectBesideS3Data() throws Exception {
    try (S3Server s3 = S3Server.start();
        Storage storage =
            Storage.create(
                new S3Settings(s3.endpoint(), null, true, S3Server.ACCESS_KEY, S3Server.SECRET_KEY),
                "test")) {
      s3.createBucket("data");
      DatasetInfo info =
          DatasetInfo.newBuilder()
              .addLabelNames("no")
              .addLabelNames("yes")
              .setFeatureScaling(FeatureScaling.newBuilder().addMean(3).addScale(4))
              .build();
      Path local = dir.resolve("up");
      Files.createDirectories(local);
      Files.createFile(local.resolve("shard"));
      DatasetInfos.write(local.resolve("info"), info);
      storage.upload(local.resolve("shard"), "s3://data/iris/train-00000.recordio");
      storage.upload(local.resolve("shard"), "s3://data/iris/train-00001.recordio");
      storage.upload(local.resolve("info"), "s3://data/iris/train.dataset.pb");
      storage.upload(local.resolve("shard"), "s3://data/plain/test.recordio");
      assertThat(
              TrainingData.find(
                  data("s3://data/iris/train-*.recordio", "s3://data/plain/test.recordio"),
                  storage))
          .isEqualTo(info);
    }
  }

  @Test
  void check_scalingOrNamesThatDoNotFitTheModel_areClearErrors() {
    DatasetInfo scaled =
        DatasetInfo.newBuilder()
            .setFeatureScaling(FeatureScaling.newBuilder().addMean(1).addScale(2))
            .build();
    assertThatThrownBy(() -> TrainingData.check(scaled, ModelSpec.softmax(4, 3)))
        .hasMessageContaining("feature scaling covers 1 features, the model has 4");
    DatasetInfo named = DatasetInfo.newBuilder().addLabelNames("a").addLabelNames("b").build();
    assertThatThrownBy(() -> TrainingData.check(named, ModelSpec.softmax(4, 3)))
        .hasMessageContaining("names 2 classes [a, b], the model has 3");
    TrainingData.check(named, ModelSpec.softmax(4, 2));
  }
}
