package dev.paramserver.models;

import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes serialised {@link Example} records round-robin into N RecordIO shard files. On failure,
 * {@link #abort()} deletes the partial files so no half-written dataset is left behind.
 */
public final class ShardedWriter implements Closeable {
  private final List<Path> files;
  private final List<RecordWriter> writers = new ArrayList<>();
  private final long[] records;
  private long written;
  private boolean closed;

  /** Creates (truncating) the given files and their parent directories. */
  public ShardedWriter(List<Path> files, Compressor compressor, int recordsPerChunk)
      throws IOException {
    if (files.isEmpty()) {
      throw new IllegalArgumentException("at least one shard file is needed");
    }
    this.files = List.copyOf(files);
    this.records = new long[files.size()];
    try {
      for (Path f : files) {
        Path parent = f.toAbsolutePath().getParent();
        if (parent != null) {
          Files.createDirectories(parent);
        }
        writers.add(RecordWriter.create(f, compressor, recordsPerChunk));
      }
    } catch (IOException | RuntimeException e) {
      abort();
      throw e;
    }
  }

  /**
   * Shard file names for an output prefix: {@code PREFIX-00000.recordio}, {@code
   * PREFIX-00001.recordio}, ... (five digits, from 0). With one shard and a prefix that already
   * ends in {@code .recordio}, the prefix itself is the file name.
   */
  public static List<Path> shardPaths(String prefix, int shards) {
    if (shards < 1) {
      throw new IllegalArgumentException("shards must be at least 1, got " + shards);
    }
    if (shards == 1 && prefix.endsWith(".recordio")) {
      return List.of(Paths.get(prefix));
    }
    List<Path> out = new ArrayList<>(shards);
    for (int i = 0; i < shards; i++) {
      out.add(Paths.get(String.format("%s-%05d.recordio", prefix, i)));
    }
    return out;
  }

  /** Appends the example to the next shard in round-robin order. */
  public void write(Example example) throws IOException {
    int shard = (int) (written % writers.size());
    writers.get(shard).write(example.toByteArray());
    records[shard]++;
    written++;
  }

  /** Records written so far. */
  public long records() {
    return written;
  }

  /** Records written to shard {@code i}. */
  public long records(int shard) {
    return records[shard];
  }

  /** The shard files. */
  public List<Path> files() {
    return files;
  }

  /** Chunks written so far over all shards (complete after {@link #close()}). */
  public long chunks() {
    return writers.stream().mapToLong(RecordWriter::chunksWritten).sum();
  }

  /** Bytes written so far over all shards (complete after {@link #close()}). */
  public long bytes() {
    return writers.stream().mapToLong(RecordWriter::bytesWritten).sum();
  }

  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    IOException first = null;
    for (RecordWriter w : writers) {
      try {
        w.close();
      } catch (IOException e) {
        if (first == null) {
          first = e;
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  /** Closes quietly and deletes every shard file. */
  public void abort() {
    closed = true;
    for (RecordWriter w : writers) {
      try {
        w.close();
      } catch (IOException | RuntimeException ignored) {
        // the files are deleted below anyway
      }
    }
    for (Path f : files) {
      try {
        Files.deleteIfExists(f);
      } catch (IOException ignored) {
        // best effort: nothing more to do about a file we cannot delete
      }
    }
  }
}
