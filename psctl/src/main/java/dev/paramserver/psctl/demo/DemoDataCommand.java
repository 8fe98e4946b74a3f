package dev.paramserver.psctl.demo;

import dev.paramserver.models.demo.DemoData;
import dev.paramserver.psctl.command.CompressorConverter;
import dev.paramserver.psctl.command.FileOutputOptions;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.recordio.Compressor;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code psctl demo-data}: writes the deterministic synthetic dataset of {@link DemoData}. */
@Command(
    name = "demo-data",
    description = {
      "Writes a deterministic synthetic dataset: DIR/train-0000N.recordio shards and"
          + " DIR/test-00000.recordio. The same options give byte-identical files.",
      "Dense (default): Gaussian classes, about 97-99%% reachable by a linear classifier.",
      "--sparse: click-through-like binary data with hashed categorical ids."
    })
public final class DemoDataCommand extends PsctlCommand {
  @Option(names = "--out", paramLabel = "DIR", description = "Directory.")
  Path out;

  @Mixin FileOutputOptions fileOutput;

  @Option(names = "--classes", defaultValue = "10", description = "Classes (default: 10).")
  int classes;

  @Option(names = "--features", defaultValue = "32", description = "Dimensions (default: 32).")
  int features;

  @Option(names = "--train", defaultValue = "60000", description = "Train records (60000).")
  int train;

  @Option(names = "--test", defaultValue = "10000", description = "Test records (10000).")
  int test;

  @Option(names = "--seed", defaultValue = "42", description = "Random seed (default: 42).")
  long seed;

  @Option(
      names = "--records-per-chunk",
      defaultValue = "500",
      description = "Records per chunk (500).")
  int recordsPerChunk;

  @Option(names = "--shards", defaultValue = "4", description = "Train files (default: 4).")
  int shards;

  @Option(
      names = "--compressor",
      defaultValue = "snappy",
      converter = CompressorConverter.class,
      paramLabel = "none|gzip|snappy",
      description = "Chunk compression (default: snappy).")
  Compressor compressor;

  @Option(
      names = "--separation",
      description = "Std-dev of class means per dimension (default: 6/sqrt(2*features)).")
  Double separation;

  @Option(names = "--sparse", description = "Click-through-like sparse binary data instead.")
  boolean sparse;

  @Option(names = "--fields", defaultValue = "20", description = "Sparse: categorical fields (20).")
  int fields;

  @Option(
      names = "--hash-bits",
      defaultValue = "20",
      description = "Sparse: ids are hashed into 2^bits (20).")
  int hashBits;

  @Override
  protected int run() throws Exception {
    Path output =
        Path.of(outPath(out == null ? null : out.toString(), fileOutput.deprecatedOutput(), "DIR"));
    DemoData.Options opts;
    try {
      opts =
          DemoData.Options.builder()
              .classes(classes)
              .features(features)
              .train(train)
              .test(test)
              .seed(seed)
              .recordsPerChunk(recordsPerChunk)
              .shards(shards)
              .compressor(compressor)
              .separation(separation == null ? Double.NaN : separation)
              .sparse(sparse)
              .fields(fields)
              .hashBits(hashBits)
              .build();
    } catch (IllegalArgumentException e) {
      throw usageError(e.getMessage());
    }
    DemoData.Result r = DemoData.generate(output, opts);
    OutputFormat shown = fileOutput.format();
    if (shown.structured()) {
      java.util.Map<String, Object> summary = new java.util.LinkedHashMap<>();
      summary.put("train", r.trainFiles().stream().map(Path::toString).toList());
      summary.put("test", r.testFile().toString());
      summary.put("sparse", sparse);
      summary.put("trainRecords", r.trainRecords());
      summary.put("testRecords", r.testRecords());
      summary.put("classes", r.classes());
      summary.put("features", r.features());
      summary.put("seed", seed);
      summary.put("oracleTestAccuracy", r.oracleTestAccuracy());
      shown.print(out(), summary);
      return 0;
    }
    PrintWriter out = out();
    for (Path f : r.trainFiles()) {
      out.println("train: " + f);
    }
    out.println("test:  " + r.testFile());
    out.printf(
        Locale.ROOT,
        "%s data: %d train + %d test records, %d classes, %d features, seed %d%n",
        sparse ? "sparse" : "dense",
        r.trainRecords(),
        r.testRecords(),
        r.classes(),
        r.features(),
        seed);
    out.printf(
        Locale.ROOT,
        "test accuracy of the generating model (about the best reachable): %.4f%n",
        r.oracleTestAccuracy());
    out.flush();
    return 0;
  }
}
