package dev.paramserver.master.dataset;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DatasetFile;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.recordio.CorruptRecordException;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.util.List;
import java.util.regex.PatternSyntaxException;

/**
 * Expands dataset globs and walks the chunk headers of every file into a {@link DatasetIndex}.
 * Files are local paths or {@code s3://bucket/key} objects; an object's headers are read with
 * 20-byte ranged reads, never by downloading it.
 */
public final class DatasetIndexer {
  private final Storage storage;

  public DatasetIndexer(Storage storage) {
    this.storage = storage;
  }

  /** An indexer for local files (and S3 with the AWS SDK's defaults), for tests and tools. */
  public static DatasetIndexer localOnly() {
    return new DatasetIndexer(Storage.create(S3Settings.defaults(), "paramserver.master.s3"));
  }

  /**
   * Indexes the files matched by {@code globs}.
   *
   * @throws ServiceException DATASET_UNREADABLE naming the glob that matched nothing (dataset info
   *     files do not count: they are skipped), the file that is not RecordIO or could not be read,
   *     or the dataset that holds no chunk
   */
  public DatasetIndex index(List<String> globs, int chunksPerTask) {
    if (globs == null || globs.isEmpty() || globs.stream().allMatch(g -> g.isBlank())) {
      throw new ServiceException(
          ErrorReason.DATASET_UNREADABLE,
          "SetDataset needs at least one glob of RecordIO files, for example /data/train-*.rio");
    }
    List<String> clean = globs.stream().map(String::trim).filter(g -> !g.isEmpty()).toList();
    List<String> files;
    try {
      files = storage.expandGlobs(clean);
    } catch (IOException e) {
      throw new ServiceException(
          ErrorReason.DATASET_UNREADABLE,
          "dataset " + clean + " cannot be used: " + e.getMessage(),
          e);
    } catch (IllegalArgumentException e) {
      // a local glob the JDK refuses: an unclosed '[' or '{' (PatternSyntaxException), a NUL
      // (InvalidPathException)
      String why =
          e instanceof PatternSyntaxException pse
              ? "a glob is malformed (" + pse.getDescription() + ")"
              : e.getMessage();
      throw new ServiceException(
          ErrorReason.DATASET_UNREADABLE,
          "dataset " + clean + " cannot be used: " + why + ": fix the glob",
          e);
    }
    DatasetIndex.Builder index =
        DatasetIndex.newBuilder().addAllGlobs(clean).setChunksPerTask(chunksPerTask);
    long chunks = 0;
    for (String file : files) {
      List<ChunkInfo> infos;
      try {
        infos = storage.scan(file);
      } catch (CorruptRecordException e) {
        // a file that does not even start like RecordIO is not data: say so, not just "corrupt"
        String what =
            e.offset() == 0 && e.getMessage().startsWith("bad magic")
                ? " is not a RecordIO file ("
                    + e.getMessage()
                    + "): give globs that match RecordIO data files only"
                : " cannot be indexed: " + e.getMessage();
        throw new ServiceException(
            ErrorReason.DATASET_UNREADABLE, "dataset file " + file + what, e);
      } catch (IOException | RuntimeException e) {
        throw new ServiceException(
            ErrorReason.DATASET_UNREADABLE,
            "dataset file " + file + " cannot be indexed: " + e.getMessage(),
            e);
      }
      DatasetFile.Builder f = DatasetFile.newBuilder().setPath(file);
      for (ChunkInfo c : infos) {
        f.addChunkOffsets(c.offset()).addChunkLengths(c.length()).addChunkRecords(c.records());
      }
      chunks += infos.size();
      index.addFiles(f);
    }
    if (chunks == 0) {
      throw new ServiceException(
          ErrorReason.DATASET_UNREADABLE,
          "dataset " + clean + " matched " + files.size() + " file(s) holding no chunk: " + files);
    }
    return index.build();
  }
}
