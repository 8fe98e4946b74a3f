package dev.paramserver.psctl.model;

import dev.paramserver.models.Dataset;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.PsctlCommand;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code psctl evaluate}: accuracy and loss of a saved model on RecordIO data, offline. */
@Command(
    name = "evaluate",
    description =
        "Evaluates a saved model (loss, accuracy; AUC for two classes) on RecordIO data of raw"
            + " features (the model's feature standardization, if any, is applied).")
public final class EvaluateCommand extends PsctlCommand {
  @Option(names = "--model", required = true, description = "Model file written by a job.")
  Path model;

  @Option(
      names = "--data",
      required = true,
      split = ",",
      description = "Globs of RecordIO files of Examples.")
  List<String> data;

  @Option(names = "--batch-size", defaultValue = "1024", description = "Examples per batch.")
  int batchSize;

  @Option(
      names = "--result-line",
      description =
          "Also print \"RESULT accuracy=<a> loss=<l> samples=<n>\" (the compose demo's last line).")
  boolean resultLine;

  @Override
  protected int run() throws Exception {
    ModelFiles.Loaded loaded = ModelFiles.read(model);
    DatasetInfos.checkLabels(loaded.labelNames(), data);
    List<Example> examples = Dataset.readGlobs(data);
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
