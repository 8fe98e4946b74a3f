package dev.paramserver.psctl.model;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.command.FileOutputOptions;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.storage.Location;
import dev.paramserver.storage.Storage;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVPrinter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code psctl predict}: writes a saved model's predictions for RecordIO data as CSV. */
@Command(
    name = "predict",
    description =
        "Writes predictions of a saved model as CSV (RFC 4180): index,label,predicted,p0,p1,..."
            + " one line per record; label and predicted are class names when the model has them."
            + " The data holds raw features: the model's standardization, if any, is applied. The"
            + " model, the data and the output may be local or s3://.")
public final class PredictCommand extends PsctlCommand {
  /** RFC 4180 with {@code \n} line ends, as psctl has always written. */
  private static final CSVFormat CSV = CSVFormat.RFC4180.builder().setRecordSeparator('\n').get();

  @Mixin ModelInput input;

  @Option(
      names = "--data",
      required = true,
      split = ",",
      paramLabel = "GLOB",
      description = "Globs of RecordIO files of Examples, local or s3://bucket/prefix.")
  List<String> data;

  @Option(
      names = "--out",
      paramLabel = "PATH|URI",
      description = "CSV file to write: a path or s3://bucket/key (uploaded once complete).")
  String out;

  @Mixin FileOutputOptions fileOutput;

  /** --out, or the deprecated --output. */
  String output;

  @Option(names = "--batch-size", defaultValue = "1024", description = "Examples per batch.")
  int batchSize;

  @Override
  protected int run() throws Exception {
    output = outPath(out, fileOutput.deprecatedOutput(), "PATH|URI");
    Location.parse(output); // a malformed URI fails before the model is read
    long written = 0;
    try (Storage storage = input.storage()) {
      ModelFiles.Loaded loaded = input.read(storage);
      Model m = loaded.model();
      List<Example> examples = ModelInput.examples(storage, loaded, data);
      int k = m.classes();
      List<String> header = new ArrayList<>(List.of("index", "label", "predicted"));
      for (int j = 0; j < k; j++) {
        header.add("p" + j);
      }
      try (CSVPrinter csv =
          new CSVPrinter(
              new BufferedWriter(
                  new OutputStreamWriter(storage.create(output), StandardCharsets.UTF_8)),
              CSV)) {
        csv.printRecord(header);
        List<Object> row = new ArrayList<>(3 + k);
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
            row.clear();
            row.add(written);
            row.add(loaded.className(b.labels()[i]));
            row.add(loaded.className(best));
            for (int j = 0; j < k; j++) {
              row.add(String.format(Locale.ROOT, "%.6g", probs[i * k + j]));
            }
            csv.printRecord(row);
            written++;
          }
        }
      }
    }
    OutputFormat shown = fileOutput.format();
    if (shown.structured()) {
      shown.print(out(), java.util.Map.of("predictions", written, "output", output));
    } else {
      out().println("wrote " + written + " predictions to " + output);
    }
    out().flush();
    return 0;
  }
}
