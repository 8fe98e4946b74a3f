package dev.paramserver.psctl.model;

import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.onnx.OnnxExport;
import dev.paramserver.onnx.proto.ModelProto;
import dev.paramserver.psctl.command.FileOutputOptions;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.storage.Location;
import dev.paramserver.storage.Storage;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code psctl export}: a saved model as an ONNX model. */
@Command(
    name = "export",
    description = {
      "Exports a saved model as an ONNX model (softmax, mlp, sparse-lr), to run in ONNX Runtime"
          + " or any ONNX server. The model and the output may be local or s3://.",
      "Inputs: 'features' float32 [N, F] of raw dense features (the model's standardization is"
          + " part of the graph); sparse-lr: 'sparse_ids' int64 [N, K] and 'sparse_values'"
          + " float32 [N, K], each row padded with value 0.",
      "Outputs: 'probabilities' float32 [N, classes] and 'predicted' int64 [N]. Label names are"
          + " in the metadata property paramserver.label_names (a JSON array)."
    })
public final class ExportCommand extends PsctlCommand {
  @Mixin ModelInput input;

  @Option(
      names = "--format",
      defaultValue = "onnx",
      paramLabel = "onnx",
      description = "Output format (default: ${DEFAULT-VALUE}).")
  String format;

  @Option(
      names = "--out",
      paramLabel = "PATH|URI",
      description = "File to write: a path or s3://bucket/key.")
  String out;

  @Mixin FileOutputOptions fileOutput;

  /** --out, or the deprecated --output. */
  String output;

  @Override
  protected int run() throws Exception {
    output = outPath(out, fileOutput.deprecatedOutput(), "PATH|URI");
    if (!format.toLowerCase(Locale.ROOT).equals("onnx")) {
      throw usageError("--format must be onnx, got '" + format + "'");
    }
    Location to = Location.parse(output);
    ModelFiles.Loaded loaded;
    ModelProto onnx;
    try (Storage storage = input.storage()) {
      loaded = input.read(storage);
      onnx = OnnxExport.build(loaded);
      if (to.isS3()) {
        // staged locally and uploaded with one PUT when closed: the object appears whole
        try (OutputStream out = storage.create(output)) {
          onnx.writeTo(out);
        }
      } else {
        OnnxExport.write(Path.of(output), onnx);
      }
    }
    OutputFormat shown = fileOutput.format();
    if (shown.structured()) {
      java.util.Map<String, Object> summary = new java.util.LinkedHashMap<>();
      summary.put("output", output);
      summary.put("irVersion", onnx.getIrVersion());
      summary.put("opset", onnx.getOpsetImport(0).getVersion());
      summary.put("model", String.valueOf(loaded.spec().type()));
      summary.put("features", loaded.spec().features());
      summary.put("classes", loaded.spec().classes());
      summary.put("standardized", loaded.standardization().isPresent());
      summary.put("labelNames", loaded.labelNames());
      shown.print(out(), summary);
      return 0;
    }
    out()
        .printf(
            "wrote %s: ONNX model (IR %d, opset %d) of a %s model, %d features, %d classes%s%s%n",
            output,
            onnx.getIrVersion(),
            onnx.getOpsetImport(0).getVersion(),
            loaded.spec().type(),
            loaded.spec().features(),
            loaded.spec().classes(),
            loaded.standardization().isPresent() ? ", standardized inputs" : "",
            loaded.labelNames().isEmpty() ? "" : ", label names " + loaded.labelNames());
    out().flush();
    return 0;
  }
}
