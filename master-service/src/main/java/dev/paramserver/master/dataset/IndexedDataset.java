package dev.paramserver.master.dataset;

import dev.paramserver.proto.v1.Chunk;
import dev.paramserver.proto.v1.DatasetFile;
import dev.paramserver.proto.v1.DatasetIndex;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * An indexed dataset cut into tasks: task {@code t} is the consecutive chunks {@code [t * c, (t +
 * 1) * c)} of all chunks in file order (a task may span two files), {@code c} being chunks per
 * task. Immutable; compact (parallel arrays) so 100k chunks take a few MB.
 */
public final class IndexedDataset {
  private final DatasetIndex index;
  private final int chunksPerTask;
  private final int[] chunkFile;
  private final long[] chunkOffset;
  private final long[] chunkLength;
  private final int[] chunkRecords;
  private final long[] taskRecords;
  private final long records;

  private IndexedDataset(DatasetIndex index) {
    this.index = index;
    this.chunksPerTask = index.getChunksPerTask();
    if (chunksPerTask < 1) {
      throw new IllegalArgumentException(
          "the dataset index has chunks_per_task " + chunksPerTask + ", expected at least 1");
    }
    int chunks = 0;
    for (DatasetFile f : index.getFilesList()) {
      if (f.getChunkLengthsCount() != f.getChunkOffsetsCount()
          || f.getChunkRecordsCount() != f.getChunkOffsetsCount()) {
        throw new IllegalArgumentException(
            "the dataset index entry of " + f.getPath() + " has arrays of different lengths");
      }
      chunks += f.getChunkOffsetsCount();
    }
    chunkFile = new int[chunks];
    chunkOffset = new long[chunks];
    chunkLength = new long[chunks];
    chunkRecords = new int[chunks];
    int c = 0;
    long total = 0;
    for (int fi = 0; fi < index.getFilesCount(); fi++) {
      DatasetFile f = index.getFiles(fi);
      for (int k = 0; k < f.getChunkOffsetsCount(); k++, c++) {
        chunkFile[c] = fi;
        chunkOffset[c] = f.getChunkOffsets(k);
        chunkLength[c] = f.getChunkLengths(k);
        chunkRecords[c] = f.getChunkRecords(k);
        total += chunkRecords[c];
      }
    }
    this.records = total;
    int tasks = (chunks + chunksPerTask - 1) / chunksPerTask;
    taskRecords = new long[tasks];
    for (int i = 0; i < chunks; i++) {
      taskRecords[i / chunksPerTask] += chunkRecords[i];
    }
  }

  /** The dataset an index describes. */
  public static IndexedDataset of(DatasetIndex index) {
    return new IndexedDataset(index);
  }

  public DatasetIndex index() {
    return index;
  }

  /** The globs the dataset was set with. */
  public List<String> globs() {
    return index.getGlobsList();
  }

  /** True if {@code globs} names this dataset (same globs, in any order, ignoring repeats). */
  public boolean sameGlobs(List<String> globs) {
    return normalise(globs).equals(normalise(index.getGlobsList()));
  }

  static TreeSet<String> normalise(List<String> globs) {
    TreeSet<String> out = new TreeSet<>();
    for (String g : globs) {
      out.add(g.trim());
    }
    return out;
  }

  public int files() {
    return index.getFilesCount();
  }

  public int chunks() {
    return chunkFile.length;
  }

  public int tasks() {
    return taskRecords.length;
  }

  public long records() {
    return records;
  }

  public int chunksPerTask() {
    return chunksPerTask;
  }

  /** Records per task, indexed by task id (a copy). */
  public long[] taskRecords() {
    return taskRecords.clone();
  }

  /** The chunks of task {@code id}, in order. */
  public List<Chunk> chunksOf(int id) {
    if (id < 0 || id >= taskRecords.length) {
      throw new IllegalArgumentException(
          "task " + id + " does not exist: the dataset has " + taskRecords.length + " tasks");
    }
    int from = id * chunksPerTask;
    int to = Math.min(from + chunksPerTask, chunkFile.length);
    List<Chunk> out = new ArrayList<>(to - from);
    for (int c = from; c < to; c++) {
      out.add(
          Chunk.newBuilder()
              .setPath(index.getFiles(chunkFile[c]).getPath())
              .setOffset(chunkOffset[c])
              .setLength(chunkLength[c])
              .setRecords(chunkRecords[c])
              .build());
    }
    return out;
  }

  /** The hyperparameters sent with the SetDataset that set this dataset. */
  public java.util.Map<String, com.google.protobuf.Value> hyperparameters() {
    return index.getHyperparametersMap();
  }
}
