package dev.paramserver.psctl.inspect;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.psctl.data.ExampleFormat;
import dev.paramserver.psctl.storage.S3Options;
import dev.paramserver.recordio.ChunkHeader;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RangeSource;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.recordio.RecordReader;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code psctl inspect}: chunk and record counts of RecordIO files, with every chunk read and its
 * CRC verified. Exit 1 if any file is corrupt (each corrupt file is named with the offset).
 */
@Command(
    name = "inspect",
    description =
        "Shows chunks, records, compressors and size of RecordIO files and verifies every"
            + " chunk (magic, CRC, decompression, record lengths).")
public final class InspectCommand extends PsctlCommand {
  @Parameters(
      arity = "1..*",
      paramLabel = "FILE",
      description =
          "RecordIO files or globs, local or s3://bucket/prefix (quote globs so the shell does"
              + " not expand them).")
  List<String> files;

  @Mixin S3Options s3;

  @Option(
      names = "--records",
      defaultValue = "0",
      paramLabel = "N",
      description = "Also print the first N records of each file, decoded as Example.")
  int records;

  @Mixin OutputFormat output;

  /** What {@code -o json} prints. */
  record Report(List<FileReport> files, Totals total, List<DatasetReport> datasets) {}

  /** One file; {@code error} (and no counts) when it is corrupt or unreadable. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record FileReport(
      String file,
      Integer chunks,
      Long records,
      List<String> compressors,
      Long bytes,
      List<String> samples,
      String error) {}

  /** The sums over the files read, and how many were corrupt. */
  record Totals(int files, long chunks, long records, long bytes, int corrupt) {}

  /** A dataset info file beside the data. */
  record DatasetReport(
      String info, int features, long records, List<String> labelNames, boolean standardized) {}

  @Override
  protected int run() throws Exception {
    if (records < 0) {
      throw usageError("--records must be >= 0, got " + records);
    }
    try (Storage storage = s3.storage()) {
      return inspectAll(storage);
    }
  }

  private int inspectAll(Storage storage) throws IOException {
    List<String> paths = storage.expandGlobs(files);
    PrintWriter out = out();
    boolean text = !output.structured();
    List<FileReport> reports = new ArrayList<>();
    long totalChunks = 0;
    long totalRecords = 0;
    long totalBytes = 0;
    int corrupt = 0;
    for (String p : paths) {
      FileReport f;
      try {
        f = inspect(storage, p);
        totalChunks += f.chunks();
        totalRecords += f.records();
        totalBytes += f.bytes();
        if (text) {
          printFile(f, out);
        }
      } catch (IOException e) {
        corrupt++;
        f = new FileReport(p, null, null, null, null, null, e.getMessage());
        out.flush();
        err().println(spec.qualifiedName() + ": " + e.getMessage());
        err().flush();
      }
      reports.add(f);
    }
    if (text && paths.size() > 1) {
      out.printf(
          "total: %d files, %d chunks, %d records, %d bytes%n",
          paths.size(), totalChunks, totalRecords, totalBytes);
    }
    List<DatasetReport> datasets = datasetInfos(storage, paths);
    if (text) {
      for (DatasetReport d : datasets) {
        out.printf(
            "%s: %d features, %d records%s%s%n",
            d.info(),
            d.features(),
            d.records(),
            d.labelNames().isEmpty() ? "" : ", label names " + d.labelNames(),
            d.standardized() ? ", standardized (mean and standard deviation stored)" : "");
      }
    } else {
      output.print(
          out,
          new Report(
              reports,
              new Totals(paths.size(), totalChunks, totalRecords, totalBytes, corrupt),
              datasets));
    }
    out.flush();
    if (corrupt > 0) {
      err()
          .println(
              spec.qualifiedName() + ": " + corrupt + " of " + paths.size() + " files are corrupt");
      err().flush();
      return 1;
    }
    return 0;
  }

  /** The datasets' info files beside the data (label names, standardization), when there are. */
  private List<DatasetReport> datasetInfos(Storage storage, List<String> paths) {
    Set<String> seen = new TreeSet<>();
    List<DatasetReport> out = new ArrayList<>();
    for (String p : paths) {
      String info = DatasetInfos.forDataLocation(p);
      try {
        if (!seen.add(info) || !storage.exists(info)) {
          continue;
        }
        DatasetInfo d;
        try (InputStream in = storage.openStream(info)) {
          d = DatasetInfo.parseFrom(in);
        }
        out.add(
            new DatasetReport(
                info,
                d.getFeatures(),
                d.getRecords(),
                List.copyOf(d.getLabelNamesList()),
                d.hasFeatureScaling()));
      } catch (IOException e) {
        err().println(spec.qualifiedName() + ": " + info + ": " + e.getMessage());
        err().flush();
      }
    }
    return out;
  }

  private static void printFile(FileReport f, PrintWriter out) {
    out.printf(
        "%s: %d chunks, %d records, compressor %s, %d bytes, CRC ok%n",
        f.file(),
        f.chunks(),
        f.records(),
        f.compressors().isEmpty() ? "-" : String.join("+", f.compressors()),
        f.bytes());
    for (int i = 0; i < f.samples().size(); i++) {
      out.append("  #").append(String.valueOf(i)).append(' ').println(f.samples().get(i));
    }
  }

  private FileReport inspect(Storage storage, String file) throws IOException {
    try (RangeSource src = storage.openRange(file)) {
      return inspect(src);
    }
  }

  /** Reads an object's headers and chunks by ranges: nothing is downloaded whole. */
  private FileReport inspect(RangeSource file) throws IOException {
    List<ChunkHeader> headers = RecordIndex.scanHeaders(file);
    Set<Compressor> compressors = EnumSet.noneOf(Compressor.class);
    long recs = 0;
    long bytes = 0;
    List<String> samples = new ArrayList<>();
    for (ChunkHeader h : headers) {
      List<byte[]> chunk = RecordReader.readChunk(file, h.toChunkInfo(file.name()));
      compressors.add(h.compressor());
      recs += chunk.size();
      bytes += h.chunkLength();
      for (byte[] r : chunk) {
        if (samples.size() >= records) {
          break;
        }
        samples.add(describe(r));
      }
    }
    return new FileReport(
        file.name(),
        headers.size(),
        recs,
        compressors.stream().map(Compressor::toString).toList(),
        bytes,
        samples,
        null);
  }

  private static String describe(byte[] record) {
    try {
      return ExampleFormat.shortForm(Example.parseFrom(record));
    } catch (InvalidProtocolBufferException e) {
      return "(" + record.length + " bytes, not an Example)";
    }
  }
}
