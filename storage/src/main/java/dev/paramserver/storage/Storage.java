package dev.paramserver.storage;

import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.recordio.RangeSource;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.recordio.RecordReader;
import java.io.EOFException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * Files wherever they are: local paths and {@code s3://bucket/key} objects of an S3-compatible
 * store, behind the few operations the project needs — glob expansion, ranged reads (RecordIO
 * headers and chunks), streamed reads, whole-object writes and deletes. The S3 client is created on
 * first use, so a process that only touches local files needs no S3 settings. Thread-safe.
 */
public final class Storage implements AutoCloseable {
  private final S3Settings settings;
  private final String settingsName;
  private S3Objects s3;

  private Storage(S3Settings settings, String settingsName) {
    this.settings = settings;
    this.settingsName = settingsName;
  }

  /**
   * @param settings how to reach the object store
   * @param settingsName the property prefix of the settings, named in error messages (for example
   *     {@code paramserver.master.s3})
   */
  public static Storage create(S3Settings settings, String settingsName) {
    return new Storage(settings, settingsName);
  }

  /** The settings this storage reaches S3 with. */
  public S3Settings settings() {
    return settings;
  }

  private synchronized S3Objects s3() {
    if (s3 == null) {
      s3 = new S3Objects(settings, settingsName);
    }
    return s3;
  }

  /**
   * Expands globs of files or objects into a sorted, de-duplicated list of locations. Local globs
   * follow {@link RecordIndex#expandGlobs}; an S3 glob ({@code s3://bucket/data/train-*.rio}) lists
   * the keys under its literal prefix and matches the rest with the same glob syntax ({@code *}
   * stays within one {@code /}-separated level, {@code **} crosses levels). A key without glob
   * characters matches itself when the object exists. Dataset info files or objects ({@link
   * RecordIndex#DATASET_INFO_SUFFIX}) are skipped: they are not data.
   *
   * @throws IOException naming the glob when one matches nothing (or only dataset info files), or
   *     the URI that is malformed
   */
  public List<String> expandGlobs(List<String> globs) throws IOException {
    TreeSet<String> out = new TreeSet<>();
    List<String> local = new ArrayList<>();
    for (String glob : globs) {
      Location loc = parse(glob);
      if (!loc.isS3()) {
        local.add(glob);
        continue;
      }
      List<String> matches = expandS3(loc);
      if (matches.isEmpty()) {
        throw new IOException("no object matches '" + glob + "'");
      }
      out.addAll(RecordIndex.withoutDatasetInfos(glob, matches));
    }
    if (!local.isEmpty()) {
      for (Path p : RecordIndex.expandGlobs(local)) {
        out.add(p.toString());
      }
    }
    return List.copyOf(out);
  }

  private List<String> expandS3(Location loc) throws IOException {
    String key = loc.key();
    int meta = firstGlobChar(key);
    if (meta < 0) {
      return !key.isEmpty() && !key.endsWith("/") && s3().exists(loc)
          ? List.of(loc.text())
          : List.of();
    }
    int slash = key.lastIndexOf('/', meta);
    String base = slash < 0 ? "" : key.substring(0, slash + 1);
    PathMatcher matcher =
        FileSystems.getDefault().getPathMatcher("glob:" + key.substring(base.length()));
    List<String> out = new ArrayList<>();
    for (String k : s3().list(loc, key.substring(0, meta))) {
      String rest = k.substring(base.length());
      if (!rest.isEmpty() && !k.endsWith("/") && matcher.matches(Path.of(rest))) {
        out.add(Location.S3_PREFIX + loc.bucket() + "/" + k);
      }
    }
    return out;
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

  /**
   * Opens a file or object for reads by position. For an object, opening asks for its size (so a
   * missing object fails here, naming it) and every read is one ranged GET of just those bytes.
   */
  public RangeSource openRange(String location) throws IOException {
    Location loc = parse(location);
    if (!loc.isS3()) {
      return RangeSource.ofFile(loc.path());
    }
    S3Objects objects = s3();
    long size = objects.size(loc);
    return new RangeSource() {
      @Override
      public String name() {
        return loc.text();
      }

      @Override
      public long size() {
        return size;
      }

      @Override
      public void readFully(ByteBuffer dst, long position) throws IOException {
        if (position < 0 || position + dst.remaining() > size) {
          throw new EOFException(loc + " holds " + size + " bytes, cannot read past its end");
        }
        objects.readRange(loc, dst, position);
      }

      @Override
      public void close() {}
    };
  }

  /** The RecordIO chunks of a file or object, found by walking the 20-byte chunk headers. */
  public List<ChunkInfo> scan(String location) throws IOException {
    try (RangeSource src = openRange(location)) {
      return RecordIndex.scan(src);
    }
  }

  /** Reads the records of RecordIO chunks of files or objects, each chunk with one ranged read. */
  public List<byte[]> readChunks(List<ChunkInfo> chunks) throws IOException {
    return RecordReader.readChunks(chunks, this::openRange);
  }

  /** The whole file or object as a stream (an object streams as it downloads). */
  public InputStream openStream(String location) throws IOException {
    Location loc = parse(location);
    if (loc.isS3()) {
      return s3().open(loc);
    }
    try {
      return Files.newInputStream(loc.path());
    } catch (NoSuchFileException e) {
      throw new StorageException(
          StorageException.Kind.NOT_FOUND, "file " + location + " does not exist", e);
    }
  }

  /**
   * A stream that writes the file or object {@code location}. A local file is written in place
   * (parent directories created); an object is staged in a local temporary file and uploaded with
   * one PUT when the stream is closed, so it appears whole or not at all.
   */
  public OutputStream create(String location) throws IOException {
    Location loc = parse(location);
    if (!loc.isS3()) {
      Path parent = loc.path().toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      return Files.newOutputStream(loc.path());
    }
    Path staging = Files.createTempFile("paramserver-upload-", ".part");
    OutputStream file = Files.newOutputStream(staging);
    return new FilterOutputStream(file) {
      private boolean closed;

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
      }

      @Override
      public void close() throws IOException {
        if (closed) {
          return;
        }
        closed = true;
        try {
          super.close();
          s3().put(staging, loc);
        } finally {
          Files.deleteIfExists(staging);
        }
      }
    };
  }

  /** Uploads (S3) or copies (local) the local file {@code file} to {@code location}. */
  public void upload(Path file, String location) throws IOException {
    Location loc = parse(location);
    if (loc.isS3()) {
      s3().put(file, loc);
    } else {
      Files.copy(file, loc.path(), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
  }

  /** Whether the file or object exists. */
  public boolean exists(String location) throws IOException {
    Location loc = parse(location);
    return loc.isS3() ? s3().exists(loc) : Files.exists(loc.path());
  }

  /** Deletes the file or object; a missing one is not an error. */
  public void delete(String location) throws IOException {
    Location loc = parse(location);
    if (loc.isS3()) {
      s3().delete(loc);
    } else {
      Files.deleteIfExists(loc.path());
    }
  }

  private static Location parse(String location) throws IOException {
    try {
      return Location.parse(location);
    } catch (IllegalArgumentException e) {
      throw new IOException(e.getMessage(), e);
    }
  }

  @Override
  public synchronized void close() {
    if (s3 != null) {
      s3.close();
      s3 = null;
    }
  }
}
