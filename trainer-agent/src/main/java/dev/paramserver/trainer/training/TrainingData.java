package dev.paramserver.trainer.training;

import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.storage.Storage;
import dev.paramserver.trainer.config.DataProperties;
import java.io.IOException;
import java.util.List;
import java.util.Optional;

/**
 * The training data's info file ({@code PREFIX.dataset.pb}, written by {@code psctl convert}): the
 * label names and feature scaling the trainer applies and writes into the model.
 */
final class TrainingData {
  private TrainingData() {}

  /**
   * The training data's info (the default instance when it has none).
   *
   * @throws IllegalArgumentException when the test data names its classes differently
   */
  static DatasetInfo find(DataProperties data, Storage storage) throws IOException {
    DatasetInfo train =
        find(data.requireTrainData(), storage).orElse(DatasetInfo.getDefaultInstance());
    Optional<DatasetInfo> test = find(data.testData(), storage);
    if (test.isPresent()
        && test.get().getLabelNamesCount() > 0
        && !test.get().getLabelNamesList().equals(train.getLabelNamesList())) {
      throw new IllegalArgumentException(
          "the test data names its classes "
              + test.get().getLabelNamesList()
              + ", the training data "
              + train.getLabelNamesList()
              + ": convert the test data with --statistics-from the training data's"
              + " .dataset.pb");
    }
    return train;
  }

  /**
   * Checks the training data's info against the model.
   *
   * @throws IllegalArgumentException when the scaling or the class names do not fit the model
   */
  static void check(DatasetInfo train, ModelSpec spec) {
    if (train.hasFeatureScaling() && train.getFeatureScaling().getMeanCount() != spec.features()) {
      throw new IllegalArgumentException(
          "the training data's feature scaling covers "
              + train.getFeatureScaling().getMeanCount()
              + " features, the model has "
              + spec.features());
    }
    if (train.getLabelNamesCount() > 0 && train.getLabelNamesCount() != spec.classes()) {
      throw new IllegalArgumentException(
          "the training data names "
              + train.getLabelNamesCount()
              + " classes "
              + train.getLabelNamesList()
              + ", the model has "
              + spec.classes()
              + " (paramserver.trainer.classes)");
    }
  }

  /** The info of the data files or objects (local or s3://). */
  private static Optional<DatasetInfo> find(List<String> globs, Storage storage)
      throws IOException {
    return DatasetInfos.findForGlobs(storage, ModelSpecs.absolute(globs));
  }
}
