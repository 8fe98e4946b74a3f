package dev.paramserver.psctl.model;

import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.onnx.OnnxExport;
import dev.paramserver.onnx.proto.ModelProto;
import dev.paramserver.psctl.PsctlCommand;
import java.nio.file.Path;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code psctl export}: a saved model as an ONNX model. */
@Command(
    name = "export",
    description = {
      "Exports a saved model as an ONNX model (softmax, mlp, sparse-lr), to run in ONNX Runtime"
          + " or any ONNX server.",
      "Inputs: 'features' float32 [N, F] of raw dense features (the model's standardization is"
          + " part of the graph); sparse-lr: 'sparse_ids' int64 [N, K] and 'sparse_values'"
          + " float32 [N, K], each row padded with value 0.",
      "Outputs: 'probabilities' float32 [N, classes] and 'predicted' int64 [N]. Label names are"
          + " in the metadata property paramserver.label_names (a JSON array)."
    })
public final class ExportCommand extends PsctlCommand {
  @Option(names = "--model", required = true, description = "Model file written by a job.")
  Path model;

  @Option(
      names = "--format",
      defaultValue = "onnx",
      paramLabel = "onnx",
      description = "Output format (default: ${DEFAULT-VALUE}).")
  String format;

  @Option(names = "--output", required = true, description = "File to write.")
  Path output;

  @Override
  protected int run() throws Exception {
    if (!format.toLowerCase(Locale.ROOT).equals("onnx")) {
      throw usageError("--format must be onnx, got '" + format + "'");
    }
    ModelFiles.Loaded loaded = ModelFiles.read(model);
    ModelProto onnx = OnnxExport.build(loaded);
    OnnxExport.write(output, onnx);
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
