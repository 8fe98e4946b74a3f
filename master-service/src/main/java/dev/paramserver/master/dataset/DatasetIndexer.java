package dev.paramserver.master.dataset;

import dev.paramserver.proto.v1.DatasetFile;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.rpc.ServiceException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** Expands dataset globs and walks the chunk headers of every file into a {@link DatasetIndex}. */
public final class DatasetIndexer {
  private DatasetIndexer() {}

  /**
   * Indexes the files matched by {@code globs}.
   *
   * @throws ServiceException DATASET_UNREADABLE naming the glob that matched nothing, the file that
   *     could not be read, or the dataset that holds no chunk
   */
  public static DatasetIndex index(List<String> globs, int chunksPerTask) {
    if (globs == null || globs.isEmpty() || globs.stream().allMatch(g -> g.isBlank())) {
      throw new ServiceException(
          ErrorReason.DATASET_UNREADABLE,
          "SetDataset needs at least one glob of RecordIO files, for example /data/train-*.rio");
    }
    List<String> clean = globs.stream().map(String::trim).filter(g -> !g.isEmpty()).toList();
    List<Path> files;
    try {
      files = RecordIndex.expandGlobs(clean);
    } catch (IOException e) {
      throw new ServiceException(
          ErrorReason.DATASET_UNREADABLE,
          "dataset " + clean + " cannot be used: " + e.getMessage(),
          e);
    }
    DatasetIndex.Builder index =
        DatasetIndex.newBuilder().addAllGlobs(clean).setChunksPerTask(chunksPerTask);
    long chunks = 0;
    for (Path file : files) {
      List<ChunkInfo> infos;
      try {
        infos = RecordIndex.scan(file);
      } catch (IOException | RuntimeException e) {
        throw new ServiceException(
            ErrorReason.DATASET_UNREADABLE,
            "dataset file " + file + " cannot be indexed: " + e.getMessage(),
            e);
      }
      DatasetFile.Builder f = DatasetFile.newBuilder().setPath(file.toString());
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
