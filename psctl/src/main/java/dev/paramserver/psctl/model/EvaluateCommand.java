package dev.paramserver.psctl.model;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.storage.Storage;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code psctl evaluate}: accuracy and loss of a saved model on RecordIO data, offline. */
@Command(
    name = "evaluate",
    description =
        "Evaluates a saved model (loss, accuracy; AUC for two classes) on RecordIO data of raw"
            + " features (the model's feature standardization, if any, is applied). The model and"
            + " the data may be local or s3://.")
public final class EvaluateCommand extends PsctlCommand {
  @Mixin ModelInput input;

  @Option(
      names = "--data",
      required = true,
      split = ",",
      paramLabel = "GLOB",
      description = "Globs of RecordIO files of Examples, local or s3://bucket/prefix.")
  List<String> data;

  @Option(names = "--batch-size", defaultValue = "1024", description = "Examples per batch.")
  int batchSize;

  @Option(
      names = "--result-line",
      description =
          "Also print \"RESULT accuracy=<a> loss=<l> samples=<n>\" (the compose demo's last line).")
  boolean resultLine;

  @Mixin OutputFormat output;

  /** What {@code -o json} prints ({@code auc} is null unless the model has two classes). */
  record Result(String model, long samples, double loss, double accuracy, Double auc) {}

  @Override
  protected int run() throws Exception {
    ModelFiles.Loaded loaded;
    List<Example> examples;
    try (Storage storage = input.storage()) {
      loaded = input.read(storage);
      examples = ModelInput.examples(storage, loaded, data);
    }
    if (examples.isEmpty()) {
      throw usageError("--data " + data + " holds no records");
    }
    int features = loaded.model().features();
    int found = Dataset.featuresOf(examples);
    if (found != features) {
      throw new IllegalArgumentException(
          "the data has " + found + " dense features per record, the model expects " + features);
    }
    Evaluation e =
        Evaluation.of(
            loaded.model(),
            loaded.parameters(),
            new Dataset(new ArrayList<>(examples), features),
            batchSize,
            loaded::prepare);
    if (output.structured()) {
      output.print(
          out(),
          new Result(
              loaded.spec().type(),
              e.samples(),
              e.loss(),
              e.accuracy(),
              Double.isNaN(e.auc()) ? null : e.auc()));
      return 0;
    }
    out()
        .println(
            String.format(
                Locale.ROOT,
                "model=%s samples=%d loss=%.6f accuracy=%.6f%s",
                loaded.spec().type(),
                e.samples(),
                e.loss(),
                e.accuracy(),
                Double.isNaN(e.auc()) ? "" : String.format(Locale.ROOT, " auc=%.6f", e.auc())));
    if (resultLine) {
      out()
          .println(
              String.format(
                  Locale.ROOT,
                  "RESULT accuracy=%.4f loss=%.4f samples=%d",
                  e.accuracy(),
                  e.loss(),
                  e.samples()));
    }
    out().flush();
    return 0;
  }
}
