package dev.paramserver.psctl.model;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.storage.S3Options;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code --model} of the model commands, a path or an {@code s3://bucket/key} object, and the S3
 * options to reach it (and the data and output locations of the command).
 */
public final class ModelInput {
  @Option(
      names = "--model",
      required = true,
      paramLabel = "PATH|URI",
      description = "Model file written by a job: a path or s3://bucket/key.")
  String model;

  @Mixin S3Options s3;

  /** A storage for the command's local and s3:// locations (close it). */
  Storage storage() {
    return s3.storage();
  }

  /** The model, read through {@code storage}. */
  ModelFiles.Loaded read(Storage storage) throws IOException {
    return ModelFiles.read(storage, model);
  }

  /**
   * Every record of the data globs (local or s3://), checked to name its classes as the model does.
   */
  static List<Example> examples(Storage storage, ModelFiles.Loaded model, List<String> data)
      throws IOException {
    DatasetInfos.checkLabels(storage, model.labelNames(), data);
    return Dataset.readGlobs(storage, data);
  }
}
