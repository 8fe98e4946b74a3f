package dev.paramserver.trainer.training;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.trainer.config.DataProperties;
import dev.paramserver.trainer.config.ModelProperties;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The model spec from the settings, with features and classes read from the data when unset. */
final class ModelSpecs {
  private ModelSpecs() {}

  /**
   * @param test the test examples (used first to infer the sizes; else the first training file)
   */
  static ModelSpec of(ModelProperties model, DataProperties data, List<Example> test)
      throws IOException {
    int features = model.features();
    int classes = model.classes();
    if (features == 0 || classes == 0) {
      List<Example> sample = test;
      if (sample.isEmpty()) {
        List<Path> files = RecordIndex.expandGlobs(absolute(data.requireTrainData()));
        sample = Dataset.readChunks(RecordIndex.scan(files.get(0)));
      }
      if (features == 0) {
        features = Dataset.featuresOf(sample);
      }
      if (classes == 0) {
        classes = Dataset.classesOf(sample);
      }
    }
    Mlp.Activation activation;
    try {
      activation = Mlp.Activation.valueOf(model.activation().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "paramserver.trainer.activation '"
              + model.activation()
              + "' is unknown: choose relu or tanh",
          e);
    }
    return new ModelSpec(
        model.model(), features, classes, model.hidden(), activation, model.embeddingWidth());
  }

  /** Relative globs are taken from this process's working directory. */
  static List<String> absolute(List<String> globs) {
    List<String> out = new ArrayList<>();
    for (String g : globs) {
      out.add(g.startsWith("/") ? g : Path.of("").toAbsolutePath().resolve(g).toString());
    }
    return out;
  }
}
