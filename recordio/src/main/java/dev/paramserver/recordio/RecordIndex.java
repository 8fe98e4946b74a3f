package dev.paramserver.recordio;

import java.io.IOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds the chunk index of RecordIO files by walking chunk headers (the format stores no index),
 * and expands file globs.
 */
public final class RecordIndex {
  private static final Logger log = LoggerFactory.getLogger(RecordIndex.class);

  /**
   * The name ending of the dataset info file that {@code psctl convert} writes beside the data
   * ({@code PREFIX.dataset.pb} beside {@code PREFIX-00000.recordio}): not RecordIO, so a glob of
   * data files such as {@code PREFIX*} skips it.
   */
  public static final String DATASET_INFO_SUFFIX = ".dataset.pb";

  /** Whether {@code location} (a path or a URI) names a dataset info file, not a data file. */
  public static boolean isDatasetInfo(String location) {
    return location.endsWith(DATASET_INFO_SUFFIX);
  }

  /**
   * {@code matches} of {@code glob} without dataset info files, each skipped one logged.
   *
   * @throws IOException naming the glob and the files when it matches only info files
   */
  public static List<String> withoutDatasetInfos(String glob, List<String> matches)
      throws IOException {
    List<String> data = new ArrayList<>(matches.size());
    List<String> skipped = new ArrayList<>();
    for (String m : matches) {
      if (isDatasetInfo(m)) {
        skipped.add(m);
      } else {
        data.add(m);
      }
    }
    if (!skipped.isEmpty() && data.isEmpty()) {
      throw new IOException(
          "'"
              + glob
              + "' matches only the dataset info file(s) "
              + skipped
              + ", which hold no records: give the RecordIO data files, for example PREFIX-*.recordio");
    }
    for (String s : skipped) {
      log.info("skipping {} (matched by '{}'): a dataset info file, not RecordIO data", s, glob);
    }
    return data;
  }

  private RecordIndex() {}

  /**
   * The chunks of {@code file}, in order. Reads only the 20-byte headers (no payload), checking
   * each header's magic and compressor and that its payload fits in the file; the CRC is checked
   * later, when a chunk is read. An empty file has no chunks.
   *
   * @throws CorruptRecordException naming the file and offset of the first bad header
   */
  public static List<ChunkInfo> scan(Path file) throws IOException {
    try (RangeSource src = RangeSource.ofFile(file)) {
      return scan(src);
    }
  }

  /**
   * The chunks of {@code source}, in order, each located by {@link RangeSource#name()}: one 20-byte
   * ranged read per chunk, no payload read (see {@link #scan(Path)}).
   */
  public static List<ChunkInfo> scan(RangeSource source) throws IOException {
    List<ChunkHeader> headers = scanHeaders(source);
    List<ChunkInfo> out = new ArrayList<>(headers.size());
    for (ChunkHeader h : headers) {
      out.add(h.toChunkInfo(source.name()));
    }
    return out;
  }

  /** Like {@link #scan(Path)} but returns the decoded headers (CRC, compressor, sizes). */
  public static List<ChunkHeader> scanHeaders(Path file) throws IOException {
    try (RangeSource src = RangeSource.ofFile(file)) {
      return scanHeaders(src);
    }
  }

  /** Like {@link #scan(RangeSource)} but returns the decoded headers. */
  public static List<ChunkHeader> scanHeaders(RangeSource source) throws IOException {
    long size = source.size();
    List<ChunkHeader> out = new ArrayList<>();
    long offset = 0;
    while (offset < size) {
      ChunkHeader h = ChunkHeader.read(source, offset, size);
      out.add(h);
      offset += h.chunkLength();
    }
    return out;
  }

  /**
   * Expands file globs into a sorted, de-duplicated list of absolute, normalised paths of regular
   * files. A glob is absolute ({@code /data/train-*.recordio}) or relative to the working directory
   * ({@code data/*.recordio}); it uses {@link java.nio.file.FileSystem#getPathMatcher} "glob:"
   * syntax ({@code * ? [..] {a,b}}, {@code **} crosses directories) in the part after the last
   * literal directory. A path without glob characters matches itself when it is a regular file.
   * Dataset info files ({@link #DATASET_INFO_SUFFIX}) are skipped: they are not data.
   *
   * @throws IOException naming the glob when one matches no file, or only dataset info files
   */
  public static List<Path> expandGlobs(List<String> globs) throws IOException {
    TreeSet<Path> out = new TreeSet<>();
    for (String glob : globs) {
      List<Path> matches = expand(glob);
      if (matches.isEmpty()) {
        throw new IOException("no file matches '" + glob + "'");
      }
      for (String m : withoutDatasetInfos(glob, matches.stream().map(Path::toString).toList())) {
        out.add(Path.of(m));
      }
    }
    return List.copyOf(out);
  }

  private static List<Path> expand(String glob) throws IOException {
    if (glob == null || glob.isBlank()) {
      throw new IOException("empty file glob");
    }
    int meta = firstGlobChar(glob);
    if (meta < 0) {
      Path p = Paths.get(glob).toAbsolutePath().normalize();
      return Files.isRegularFile(p) ? List.of(p) : List.of();
    }
    int slash = glob.lastIndexOf('/', meta);
    String baseText = slash < 0 ? "" : glob.substring(0, slash + 1);
    String pattern = glob.substring(slash + 1);
    Path base = Paths.get(baseText).toAbsolutePath().normalize();
    if (!Files.isDirectory(base)) {
      return List.of();
    }
    int depth = pattern.contains("**") ? Integer.MAX_VALUE : pattern.split("/", -1).length;
    PathMatcher matcher = FileSystems.getDefault().getPathMatcher("glob:" + pattern);
    try (Stream<Path> files = Files.walk(base, depth)) {
      return files
          .filter(p -> !p.equals(base) && matcher.matches(base.relativize(p)))
          .filter(Files::isRegularFile)
          .map(p -> p.toAbsolutePath().normalize())
          .toList();
    }
  }

  private static int firstGlobChar(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '*' || c == '?' || c == '[' || c == '{') {
        return i;
      }
    }
    return -1;
  }
}
