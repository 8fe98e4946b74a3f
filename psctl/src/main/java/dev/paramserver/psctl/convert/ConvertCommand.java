package dev.paramserver.psctl.convert;

import dev.paramserver.models.DatasetInfos;
import dev.paramserver.models.ShardedWriter;
import dev.paramserver.models.Standardization;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.psctl.command.CompressorConverter;
import dev.paramserver.psctl.command.FileOutputOptions;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.psctl.data.DatasetStats;
import dev.paramserver.psctl.storage.S3Options;
import dev.paramserver.psctl.storage.StagedOutput;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.storage.Storage;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code psctl convert}: CSV or LibSVM to RecordIO shards of serialised Example records. */
@Command(
    name = "convert",
    description = {
      "Converts a CSV or LibSVM file into RecordIO shards of paramserver.v1.Example records.",
      "Output files: PREFIX-00000.recordio, PREFIX-00001.recordio, ... (one per shard, records"
          + " dealt round-robin); with --shards 1 and a PREFIX ending in .recordio, exactly PREFIX.",
      "CSV (RFC 4180 quoting): one column is the class label, every other column a dense"
          + " feature. Labels are class indices (integers >= 0) or names (mapped to indices in"
          + " sorted order; the names go into PREFIX.dataset.pb and from there into the model). A"
          + " first row without numbers is a header.",
      "Beside the data, PREFIX.dataset.pb records the label names and, with --standardize, each"
          + " feature's mean and standard deviation; pass it to --statistics-from when converting"
          + " the test data.",
      "LibSVM: 'label idx:val ...', features become sparse ids/values; labels -1/+1 become 0/1;"
          + " '#' starts a comment."
    })
public final class ConvertCommand extends PsctlCommand {
  @Option(names = "--input", required = true, paramLabel = "FILE", description = "Input file.")
  Path input;

  @Option(
      names = "--out",
      paramLabel = "PREFIX",
      description =
          "Output prefix, local (directories are created) or s3://bucket/prefix (files are"
              + " written locally, then uploaded).")
  String out;

  @Mixin FileOutputOptions fileOutput;

  /** --out, or the deprecated --output. */
  String output;

  @Mixin S3Options s3;

  @Option(
      names = "--format",
      paramLabel = "csv|libsvm",
      description =
          "Input format. Default: by extension (.svm, .libsvm, .txt -> libsvm; otherwise csv).")
  String format;

  @Option(
      names = "--label-column",
      defaultValue = "last",
      paramLabel = "first|last|N|NAME",
      description =
          "CSV label column: first, last, a 0-based number or a header name (default:"
              + " ${DEFAULT-VALUE}).")
  String labelColumn;

  @Option(
      names = "--header",
      description =
          "CSV: the first row (after --skip-lines) names the columns. Without it, a first row"
              + " that holds no number is taken for a header.")
  boolean header;

  @Option(
      names = "--standardize",
      description =
          "Compute each dense feature's mean and standard deviation on this data and store them"
              + " in PREFIX.dataset.pb: the trainer, psctl evaluate/predict and the ONNX export"
              + " then standardize raw features with them.")
  boolean standardize;

  @Option(
      names = "--statistics-from",
      paramLabel = "FILE",
      description =
          "A .dataset.pb of the training data: reuse its label names and feature statistics"
              + " (for test data, so both map classes and scale features alike).")
  Path statisticsFrom;

  @Option(
      names = "--skip-lines",
      defaultValue = "0",
      paramLabel = "K",
      description = "Lines to skip at the top, e.g. a header (default: ${DEFAULT-VALUE}).")
  int skipLines;

  @Option(
      names = "--delimiter",
      defaultValue = ",",
      description = "CSV field delimiter; '\\t' or 'tab' for a tab (default: '${DEFAULT-VALUE}').")
  String delimiter;

  @Option(
      names = "--records-per-chunk",
      defaultValue = "1000",
      paramLabel = "R",
      description = "Records per RecordIO chunk (default: ${DEFAULT-VALUE}).")
  int recordsPerChunk;

  @Option(
      names = "--compressor",
      defaultValue = "snappy",
      converter = CompressorConverter.class,
      paramLabel = "none|gzip|snappy",
      description = "Chunk compression (default: ${DEFAULT-VALUE}).")
  Compressor compressor;

  @Option(
      names = "--shards",
      defaultValue = "1",
      paramLabel = "N",
      description = "Number of output files (default: ${DEFAULT-VALUE}).")
  int shards;

  @Option(
      names = "--index-base",
      defaultValue = "auto",
      paramLabel = "0|1|auto",
      description =
          "LibSVM feature index base; auto: 0-based if any index 0 appears, else 1-based"
              + " (indices are stored 0-based) (default: ${DEFAULT-VALUE}).")
  String indexBase;

  @Override
  protected int run() throws Exception {
    output = outPath(out, fileOutput.deprecatedOutput(), "PREFIX");
    String fmt = format == null ? formatFromExtension(input) : format.toLowerCase(Locale.ROOT);
    if (!fmt.equals("csv") && !fmt.equals("libsvm")) {
      throw usageError("--format must be csv or libsvm, got '" + format + "'");
    }
    CsvSource.LabelColumn label = CsvSource.LabelColumn.parse(labelColumn);
    if (label == null) {
      throw usageError(
          "--label-column must be first, last, a 0-based column number or a header name, got '"
              + labelColumn
              + "'");
    }
    LibSvmSource.IndexBase base = LibSvmSource.IndexBase.parse(indexBase);
    if (base == null) {
      throw usageError("--index-base must be 0, 1 or auto, got '" + indexBase + "'");
    }
    if (skipLines < 0) {
      throw usageError("--skip-lines must be >= 0, got " + skipLines);
    }
    if (recordsPerChunk < 1) {
      throw usageError("--records-per-chunk must be >= 1, got " + recordsPerChunk);
    }
    if (shards < 1 || shards > 100_000) {
      throw usageError("--shards must be between 1 and 100000, got " + shards);
    }
    String delim = delimiter.equals("\\t") || delimiter.equalsIgnoreCase("tab") ? "\t" : delimiter;
    if (delim.length() != 1) {
      throw usageError("--delimiter must be one character, got '" + delimiter + "'");
    }
    if (!Files.isRegularFile(input)) {
      throw new NoSuchFileException(input.toString());
    }
    DatasetInfo given = DatasetInfo.getDefaultInstance();
    if (statisticsFrom != null) {
      given = DatasetInfos.read(statisticsFrom);
      if (standardize && !given.hasFeatureScaling()) {
        throw usageError(
            "--statistics-from "
                + statisticsFrom
                + " holds no feature statistics (its data was converted without --standardize)");
      }
    }
    if ((standardize || given.hasFeatureScaling()) && !fmt.equals("csv")) {
      throw usageError("--standardize scales dense features, which only CSV input has");
    }

    try (StagedOutput target = StagedOutput.of(output);
        Storage storage = s3.storage()) {
      return convert(fmt, label, base, delim, given, target, storage);
    }
  }

  private int convert(
      String fmt,
      CsvSource.LabelColumn label,
      LibSvmSource.IndexBase base,
      String delim,
      DatasetInfo given,
      StagedOutput target,
      Storage storage)
      throws Exception {
    List<Path> files = ShardedWriter.shardPaths(target.localPrefix(), shards);
    DatasetStats stats = new DatasetStats();
    ShardedWriter writer = new ShardedWriter(files, compressor, recordsPerChunk);
    Standardization.Accumulator moments = new Standardization.Accumulator();
    List<String> labelNames = List.of();
    String how;
    try {
      if (fmt.equals("csv")) {
        CsvSource src = new CsvSource(input, delim.charAt(0), label, skipLines, header);
        src.read(
            given.getLabelNamesList(),
            e -> {
              stats.add(e);
              if (standardize && statisticsFrom == null) {
                moments.add(e);
              }
              writer.write(e);
            });
        labelNames = src.labelNames();
        how =
            "csv, label column "
                + (src.columnNames().isEmpty()
                    ? Integer.toString(src.labelIndex())
                    : "'" + src.columnNames().get(src.labelIndex()) + "'");
      } else {
        LibSvmSource src = new LibSvmSource(input, base, skipLines);
        src.read(
            e -> {
              stats.add(e);
              writer.write(e);
            });
        how =
            "libsvm, "
                + (src.indexBase() == LibSvmSource.IndexBase.ONE ? "1" : "0")
                + "-based indices";
      }
      writer.close();
    } catch (Exception | Error e) {
      writer.abort();
      throw e;
    }
    DatasetInfo.Builder info =
        DatasetInfo.newBuilder()
            .addAllLabelNames(labelNames)
            .setFeatures((int) stats.denseWidth())
            .setRecords(stats.records())
            .setSource(input.toAbsolutePath().toString());
    if (given.hasFeatureScaling()) {
      int n = given.getFeatureScaling().getMeanCount();
      if (n != stats.denseWidth()) {
        writer.abort();
        throw new IllegalArgumentException(
            "--statistics-from "
                + statisticsFrom
                + " has statistics of "
                + n
                + " features, "
                + input
                + " has "
                + stats.denseWidth());
      }
      info.setFeatureScaling(given.getFeatureScaling());
    } else if (standardize && moments.count() > 0) {
      info.setFeatureScaling(moments.result().toProto());
    }
    Path infoFile = DatasetInfos.forPrefix(target.localPrefix());
    DatasetInfos.write(infoFile, info.build());
    // an s3:// output: every shard and the info file are uploaded once all are written
    List<Path> written = new ArrayList<>(files);
    written.add(infoFile);
    target.publish(written, storage);
    if (stats.records() == 0) {
      err().println(spec.qualifiedName() + ": warning: " + input + " holds no records");
    }
    OutputFormat shown = fileOutput.format();
    if (shown.structured()) {
      Map<String, Object> summary = new LinkedHashMap<>();
      summary.put("records", stats.records());
      summary.put("input", input.toString());
      summary.put("format", how);
      List<Map<String, Object>> shards = new ArrayList<>();
      for (int i = 0; i < files.size(); i++) {
        shards.add(
            Map.of(
                "path",
                target.destinationOf(files.get(i)).toString(),
                "records",
                writer.records(i)));
      }
      summary.put("files", shards);
      summary.put("chunks", writer.chunks());
      summary.put("bytes", writer.bytes());
      summary.put("compressor", String.valueOf(compressor));
      summary.put("features", stats.describeFeatures());
      summary.put("classes", stats.describeClasses());
      summary.put("labelNames", labelNames);
      summary.put("standardized", info.hasFeatureScaling());
      summary.put("datasetInfo", target.destinationOf(infoFile).toString());
      shown.print(out(), summary);
      return 0;
    }
    var out = out();
    out.printf("converted %d records from %s (%s)%n", stats.records(), input, how);
    for (int i = 0; i < files.size(); i++) {
      out.printf("  %s: %d records%n", target.destinationOf(files.get(i)), writer.records(i));
    }
    out.printf(
        "files: %d, chunks: %d, bytes: %d, compressor: %s%n",
        files.size(), writer.chunks(), writer.bytes(), compressor);
    out.printf("features: %s%n", stats.describeFeatures());
    out.printf("classes seen: %s%n", stats.describeClasses());
    if (!labelNames.isEmpty()) {
      StringBuilder names = new StringBuilder();
      for (int k = 0; k < labelNames.size(); k++) {
        names.append(k == 0 ? "" : ", ").append(k).append(": ").append(labelNames.get(k));
      }
      out.printf("label names: %s%n", names);
    }
    if (info.hasFeatureScaling()) {
      out.printf(
          "standardized: mean and standard deviation of %d features%s%n",
          info.getFeatureScaling().getMeanCount(),
          statisticsFrom == null ? "" : " from " + statisticsFrom);
    }
    out.printf("dataset info: %s%n", target.destinationOf(infoFile));
    out.flush();
    return 0;
  }

  static String formatFromExtension(Path file) {
    String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
    return name.endsWith(".svm") || name.endsWith(".libsvm") || name.endsWith(".txt")
        ? "libsvm"
        : "csv";
  }
}
