package dev.paramserver.psctl.model;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.PsctlCommand;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code psctl predict}: writes a saved model's predictions for RecordIO data as CSV. */
@Command(
    name = "predict",
    description =
        "Writes predictions of a saved model as CSV: index,label,predicted,p0,p1,... one line per"
            + " record; label and predicted are class names when the model has them. The data"
            + " holds raw features: the model's standardization, if any, is applied.")
public final class PredictCommand extends PsctlCommand {
  @Option(names = "--model", required = true, description = "Model file written by a job.")
  Path model;

  @Option(
      names = "--data",
      required = true,
      split = ",",
      description = "Globs of RecordIO files of Examples.")
  List<String> data;

  @Option(names = "--output", required = true, description = "CSV file to write.")
  Path output;

  @Option(names = "--batch-size", defaultValue = "1024", description = "Examples per batch.")
  int batchSize;

  @Override
  protected int run() throws Exception {
    ModelFiles.Loaded loaded = ModelFiles.read(model);
    DatasetInfos.checkLabels(loaded.labelNames(), data);
    Model m = loaded.model();
    List<Example> examples = Dataset.readGlobs(data);
    int k = m.classes();
    long written = 0;
    try (BufferedWriter w = Files.newBufferedWriter(output)) {
      StringBuilder header = new StringBuilder("index,label,predicted");
      for (int j = 0; j < k; j++) {
        header.append(",p").append(j);
      }
      w.write(header.append('\n').toString());
      for (Batch b : new Dataset(new ArrayList<>(examples), m.features()).batches(batchSize)) {
        loaded.prepare(b);
        float[] probs = m.predict(loaded.parameters(), b);
        for (int i = 0; i < b.size(); i++) {
          int best = 0;
          for (int j = 1; j < k; j++) {
            if (probs[i * k + j] > probs[i * k + best]) {
              best = j;
            }
          }
          StringBuilder line = new StringBuilder();
          line.append(written)
              .append(',')
              .append(csvField(loaded.className(b.labels()[i])))
              .append(',')
              .append(csvField(loaded.className(best)));
          for (int j = 0; j < k; j++) {
            line.append(',').append(String.format(Locale.ROOT, "%.6g", probs[i * k + j]));
          }
          w.write(line.append('\n').toString());
          written++;
        }
      }
    }
    out().println("wrote " + written + " predictions to " + output);
    out().flush();
    return 0;
  }

  /** Quotes a field that holds a comma, a quote or a line break (RFC 4180). */
  static String csvField(String s) {
    if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
      return s;
    }
    return '"' + s.replace("\"", "\"\"") + '"';
  }
}
