package dev.paramserver.psctl.inspect;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.models.DatasetInfos;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.psctl.PsctlCommand;
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
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
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
    mixinStandardHelpOptions = true,
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
    long totalChunks = 0;
    long totalRecords = 0;
    long totalBytes = 0;
    int corrupt = 0;
    for (String p : paths) {
      try {
        FileSummary s = inspect(storage, p, out);
        totalChunks += s.chunks;
        totalRecords += s.records;
        totalBytes += s.bytes;
      } catch (IOException e) {
        corrupt++;
        out.flush();
        err().println(spec.qualifiedName() + ": " + e.getMessage());
        err().flush();
      }
    }
    if (paths.size() > 1) {
      out.printf(
          "total: %d files, %d chunks, %d records, %d bytes%n",
          paths.size(), totalChunks, totalRecords, totalBytes);
    }
    printDatasetInfo(storage, paths, out);
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
  private void printDatasetInfo(Storage storage, List<String> paths, PrintWriter out) {
    Set<String> seen = new TreeSet<>();
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
        out.printf(
            "%s: %d features, %d records%s%s%n",
            info,
            d.getFeatures(),
            d.getRecords(),
            d.getLabelNamesCount() == 0 ? "" : ", label names " + d.getLabelNamesList(),
            d.hasFeatureScaling() ? ", standardized (mean and standard deviation stored)" : "");
      } catch (IOException e) {
        err().println(spec.qualifiedName() + ": " + info + ": " + e.getMessage());
        err().flush();
      }
    }
  }

  private record FileSummary(long chunks, long records, long bytes) {}

  private FileSummary inspect(Storage storage, String file, PrintWriter out) throws IOException {
    try (RangeSource src = storage.openRange(file)) {
      return inspect(src, out);
    }
  }

  /** Reads an object's headers and chunks by ranges: nothing is downloaded whole. */
  private FileSummary inspect(RangeSource file, PrintWriter out) throws IOException {
    List<ChunkHeader> headers = RecordIndex.scanHeaders(file);
    Set<Compressor> compressors = EnumSet.noneOf(Compressor.class);
    long recs = 0;
    long bytes = 0;
    int[] shown = {0};
    StringBuilder sample = new StringBuilder();
    for (ChunkHeader h : headers) {
      List<byte[]> chunk = RecordReader.readChunk(file, h.toChunkInfo(file.name()));
      compressors.add(h.compressor());
      recs += chunk.size();
      bytes += h.chunkLength();
      for (byte[] r : chunk) {
        if (shown[0] >= records) {
          break;
        }
        sample.append("  #").append(shown[0]++).append(' ').append(describe(r)).append('\n');
      }
    }
    out.printf(
        "%s: %d chunks, %d records, compressor %s, %d bytes, CRC ok%n",
        file.name(),
        headers.size(),
        recs,
        compressors.isEmpty()
            ? "-"
            : compressors.stream().map(Compressor::toString).collect(Collectors.joining("+")),
        bytes);
    out.print(sample);
    return new FileSummary(headers.size(), recs, bytes);
  }

  private static String describe(byte[] record) {
    try {
      return ExampleFormat.shortForm(Example.parseFrom(record));
    } catch (InvalidProtocolBufferException e) {
      return "(" + record.length + " bytes, not an Example)";
    }
  }
}
