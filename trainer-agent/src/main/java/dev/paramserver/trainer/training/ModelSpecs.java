package dev.paramserver.trainer.training;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.storage.Location;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.ModelProperties;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The model spec from the settings, with features and classes read from the data when unset. */
final class ModelSpecs {
  private ModelSpecs() {}

  /**
   * @param test the test examples (used first to infer the sizes; else the first training file)
   */
  static ModelSpec of(ModelProperties model, DataProperties data, List<Example> test)
      throws IOException {
    return of(model, data, test, Storage.create(S3Settings.defaults(), "paramserver.trainer.s3"));
  }

  /**
   * @param storage reads the first training file when the sizes must come from it
   */
  static ModelSpec of(
      ModelProperties model, DataProperties data, List<Example> test, Storage storage)
      throws IOException {
    int features = model.features();
    int classes = model.classes();
    if (features == 0 || classes == 0) {
      List<Example> sample = test;
      if (sample.isEmpty()) {
        List<String> files = storage.expandGlobs(absolute(data.requireTrainData()));
        sample = Dataset.readChunks(storage.scan(files.get(0)), storage::openRange);
      }
      if (features == 0) {
        features = Dataset.featuresOf(sample);
      }
      if (classes == 0) {
        classes = Dataset.classesOf(sample);
      }
    }
    return new ModelSpec(
        model.model().id(),
        features,
        classes,
        model.hidden(),
        model.activation(),
        model.embeddingWidth());
  }

  /**
   * Relative globs are taken from this process's working directory; s3:// globs stay as they are.
   */
  static List<String> absolute(List<String> globs) {
    List<String> out = new ArrayList<>();
    for (String g : globs) {
      out.add(
          g.startsWith("/") || Location.isS3(g)
              ? g
              : Path.of("").toAbsolutePath().resolve(g).toString());
    }
    return out;
  }
}
