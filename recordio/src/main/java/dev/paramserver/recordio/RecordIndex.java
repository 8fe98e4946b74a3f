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

/**
 * Builds the chunk index of RecordIO files by walking chunk headers (the format stores no index),
 * and expands file globs.
 */
public final class RecordIndex {
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
   *
   * @throws IOException naming the glob when one matches no file
   */
  public static List<Path> expandGlobs(List<String> globs) throws IOException {
    TreeSet<Path> out = new TreeSet<>();
    for (String glob : globs) {
      List<Path> matches = expand(glob);
      if (matches.isEmpty()) {
        throw new IOException("no file matches '" + glob + "'");
      }
      out.addAll(matches);
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
