package dev.paramserver.models;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.recordio.RangeSource;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.recordio.RecordReader;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/** Examples in memory, read from RecordIO files or chunks, cut into batches. */
public final class Dataset {
  private final List<Example> examples;
  private final int features;

  public Dataset(List<Example> examples, int features) {
    this.examples = examples;
    this.features = features;
  }

  /** Reads every record of the files matched by the globs. */
  public static List<Example> readGlobs(List<String> globs) throws IOException {
    List<ChunkInfo> chunks = new ArrayList<>();
    for (Path file : RecordIndex.expandGlobs(globs)) {
      chunks.addAll(RecordIndex.scan(file));
    }
    return readChunks(chunks);
  }

  /**
   * Reads every record of the files or objects ({@code s3://bucket/key} globs) matched by the
   * globs, each chunk with one ranged read.
   */
  public static List<Example> readGlobs(Storage storage, List<String> globs) throws IOException {
    List<ChunkInfo> chunks = new ArrayList<>();
    for (String file : storage.expandGlobs(globs)) {
      chunks.addAll(storage.scan(file));
    }
    return readChunks(chunks, storage::openRange);
  }

  /**
   * Reads the records of the chunks, checking CRCs; a record that is not an Example is an error.
   */
  public static List<Example> readChunks(List<ChunkInfo> chunks) throws IOException {
    return readChunks(chunks, RangeSource::openLocal);
  }

  /** Like {@link #readChunks(List)}, opening the files or objects with {@code opener}. */
  public static List<Example> readChunks(List<ChunkInfo> chunks, RangeSource.Opener opener)
      throws IOException {
    List<Example> out = new ArrayList<>();
    for (ChunkInfo c : chunks) {
      int i = 0;
      for (byte[] rec : RecordReader.readChunks(List.of(c), opener)) {
        try {
          out.add(Example.parseFrom(rec));
        } catch (InvalidProtocolBufferException e) {
          throw new IOException(
              "record "
                  + i
                  + " of the chunk at offset "
                  + c.offset()
                  + " of "
                  + c.location()
                  + " is not a paramserver.v1.Example: "
                  + e.getMessage(),
              e);
        }
        i++;
      }
    }
    return out;
  }

  /** Dense feature count of the examples (that of the first one; 0 when empty). */
  public static int featuresOf(List<Example> examples) {
    return examples.isEmpty() ? 0 : examples.get(0).getDenseCount();
  }

  /** Number of classes: the largest label + 1, at least 2. */
  public static int classesOf(List<Example> examples) {
    int max = 1;
    for (Example e : examples) {
      max = Math.max(max, e.getLabel());
    }
    return max + 1;
  }

  public int size() {
    return examples.size();
  }

  public List<Example> examples() {
    return examples;
  }

  /** Shuffles in place with the seed. */
  public Dataset shuffle(long seed) {
    Collections.shuffle(examples, new Random(seed));
    return this;
  }

  /** Consecutive batches of at most {@code batchSize} examples. */
  public List<Batch> batches(int batchSize) {
    if (batchSize <= 0) {
      throw new IllegalArgumentException("batch size must be > 0, got " + batchSize);
    }
    List<Batch> out = new ArrayList<>();
    for (int i = 0; i < examples.size(); i += batchSize) {
      out.add(Batch.of(examples.subList(i, Math.min(examples.size(), i + batchSize)), features));
    }
    return out;
  }
}
