package dev.paramserver.psctl.cluster;

import dev.paramserver.localcluster.RunOptions;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.recordio.RecordIndex;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The input of a local run, made ready before the cluster starts: without {@code --train} or {@code
 * --demo-data}, the demo dataset is generated into {@code <run-dir>/data}; with {@code --format
 * libsvm}, each file of {@code --train} (and {@code --test}) is converted into RecordIO shards in
 * {@code <run-dir>/data}, because the master dispatches RecordIO chunks. With {@code --format csv}
 * the one training file is converted (standardized with {@code --standardize}) and each test file
 * with the training file's label names and statistics.
 */
final class RunInput {
  /** Runs {@code psctl convert} with the given arguments and returns its exit code. */
  interface Converter {
    int convert(String... args);
  }

  private final PrintWriter out;
  private final Converter converter;

  RunInput(PrintWriter out, Converter converter) {
    this.out = out;
    this.converter = converter;
  }

  /**
   * Rewrites {@code options} to train on prepared RecordIO data where needed.
   *
   * @throws RunOptions.UsageException when LibSVM input has no --train
   * @throws IOException when a file cannot be read or written, naming it
   */
  void prepare(RunOptions options) throws IOException {
    Path data = options.runDir().resolve("data");
    if (options.isLibSvm()) {
      if (options.train() == null) {
        throw new RunOptions.UsageException("--format libsvm needs --train FILE (LibSVM text)");
      }
      out.println("converting LibSVM input to RecordIO in " + data + "...");
      String train = convert(options.train(), data.resolve("train"));
      String test = options.test() == null ? null : convert(options.test(), data.resolve("test"));
      options.useRecordIo(train, test);
    } else if (options.isCsv()) {
      if (options.train() == null) {
        throw new RunOptions.UsageException("--format csv needs --train FILE (CSV text)");
      }
      List<Path> train = files(options.train(), "CSV");
      if (train.size() != 1) {
        throw new RunOptions.UsageException(
            "--format csv takes one training file, '"
                + options.train()
                + "' matches "
                + train.size()
                + ": convert several with psctl convert and pass --train GLOB of the RecordIO files");
      }
      out.println("converting CSV input to RecordIO in " + data + "...");
      Path prefix = data.resolve("train");
      List<String> args =
          new ArrayList<>(
              List.of(
                  "--format",
                  "csv",
                  "--input",
                  train.get(0).toString(),
                  "--out",
                  prefix.toString(),
                  "--shards",
                  "2"));
      if (options.standardize()) {
        args.add("--standardize");
      }
      run("converting " + train.get(0) + " from CSV", args.toArray(String[]::new));
      String test = null;
      if (options.test() != null) {
        List<Path> tests = files(options.test(), "CSV");
        for (int i = 0; i < tests.size(); i++) {
          run(
              "converting " + tests.get(i) + " from CSV",
              "--format",
              "csv",
              "--input",
              tests.get(i).toString(),
              "--out",
              data.resolve("test-" + i).toString(),
              "--statistics-from",
              prefix + ".dataset.pb");
        }
        test = data.resolve("test-*.recordio").toString();
      }
      options.useRecordIo(prefix + "-*.recordio", test);
    } else if (options.hasNoInput()) {
      out.println("generating demo data into " + data + "...");
      DemoData.Result r = DemoData.generate(data, DemoData.Options.builder().build());
      out.printf(
          Locale.ROOT,
          "demo data: %d train + %d test records, %d classes, %d features%n",
          r.trainRecords(),
          r.testRecords(),
          r.classes(),
          r.features());
      options.useDemoData(data);
    }
  }

  private static List<Path> files(String glob, String format) {
    try {
      return RecordIndex.expandGlobs(List.of(glob));
    } catch (IOException e) {
      throw new RunOptions.UsageException(format + " input: " + e.getMessage());
    }
  }

  private void run(String what, String... args) throws IOException {
    int code = converter.convert(args);
    if (code != 0) {
      throw new IOException(what + " failed (exit code " + code + ")");
    }
  }

  /** Converts every file matching {@code glob}; returns the glob of the RecordIO shards. */
  private String convert(String glob, Path prefix) throws IOException {
    List<Path> files = files(glob, "LibSVM");
    for (int i = 0; i < files.size(); i++) {
      Path file = files.get(i);
      int code =
          converter.convert(
              "--format",
              "libsvm",
              "--input",
              file.toString(),
              "--out",
              prefix + "-" + i,
              "--shards",
              "2");
      if (code != 0) {
        throw new IOException(
            "converting " + file + " from LibSVM failed (exit code " + code + ")");
      }
    }
    return prefix + "-*.recordio";
  }
}
