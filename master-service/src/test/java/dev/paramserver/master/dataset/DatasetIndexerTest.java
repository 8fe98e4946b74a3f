package dev.paramserver.master.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.Chunk;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Indexing real RecordIO files into chunks and tasks. */
class DatasetIndexerTest {
  @TempDir Path dir;

  /** Writes {@code records} records, {@code perChunk} per chunk; returns the file. */
  static Path write(Path file, int records, int perChunk, Compressor c) throws IOException {
    try (RecordWriter w = RecordWriter.create(file, c, perChunk)) {
      for (int i = 0; i < records; i++) {
        w.write(("record-" + i).getBytes(StandardCharsets.UTF_8));
      }
    }
    return file;
  }

  @Test
  void index_groupsConsecutiveChunksAcrossFilesIntoTasks() throws IOException {
    write(dir.resolve("a.rio"), 10, 4, Compressor.NONE); // chunks of 4, 4, 2 records
    write(dir.resolve("b.rio"), 6, 3, Compressor.GZIP); // chunks of 3, 3
    DatasetIndex index = DatasetIndexer.localOnly().index(List.of(dir + "/*.rio"), 2);
    IndexedDataset d = IndexedDataset.of(index);

    assertThat(d.files()).isEqualTo(2);
    assertThat(d.chunks()).isEqualTo(5);
    assertThat(d.tasks()).isEqualTo(3);
    assertThat(d.records()).isEqualTo(16);
    assertThat(d.taskRecords()).containsExactly(8, 5, 3);
    List<Chunk> spanning = d.chunksOf(1);
    assertThat(spanning)
        .extracting(Chunk::getPath)
        .containsExactly(dir.resolve("a.rio").toString(), dir.resolve("b.rio").toString());
    assertThat(spanning).extracting(Chunk::getRecords).containsExactly(2, 3);
    assertThat(spanning.get(1).getOffset()).isZero();
    Chunk second = d.chunksOf(0).get(1);
    assertThat(second.getOffset()).isEqualTo(d.chunksOf(0).get(0).getLength());
  }

  @Test
  void sameGlobs_ignoresOrderAndRepeats() throws IOException {
    write(dir.resolve("a.rio"), 1, 1, Compressor.NONE);
    write(dir.resolve("b.rio"), 1, 1, Compressor.NONE);
    String a = dir.resolve("a.rio").toString();
    String b = dir.resolve("b.rio").toString();
    IndexedDataset d = IndexedDataset.of(DatasetIndexer.localOnly().index(List.of(a, b), 1));
    assertThat(d.sameGlobs(List.of(b, a, a))).isTrue();
    assertThat(d.sameGlobs(List.of(a))).isFalse();
  }

  @Test
  void index_globMatchingNothing_isDatasetUnreadableNamingTheGlob() {
    String glob = dir + "/missing-*.rio";
    assertThatThrownBy(() -> DatasetIndexer.localOnly().index(List.of(glob), 1))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining(glob)
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.DATASET_UNREADABLE);
  }

  @Test
  void index_corruptFile_isDatasetUnreadableNamingTheFile() throws IOException {
    Path bad =
        Files.write(
            dir.resolve("bad.rio"),
            new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21});
    assertThatThrownBy(() -> DatasetIndexer.localOnly().index(List.of(bad.toString()), 1))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining(bad.toString())
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.DATASET_UNREADABLE);
  }

  @Test
  void index_prefixGlob_skipsTheDatasetInfoFileBesideTheData() throws IOException {
    // psctl convert writes PREFIX-00000.recordio and PREFIX.dataset.pb side by side
    write(dir.resolve("train-00000.recordio"), 4, 2, Compressor.NONE);
    Files.write(dir.resolve("train.dataset.pb"), "not RecordIO".getBytes(StandardCharsets.UTF_8));

    IndexedDataset d =
        IndexedDataset.of(DatasetIndexer.localOnly().index(List.of(dir + "/train*"), 1));

    assertThat(d.files()).isEqualTo(1);
    assertThat(d.records()).isEqualTo(4);
  }

  @Test
  void index_fileThatIsNotRecordIo_isDatasetUnreadableSayingSoAndNamingIt() throws IOException {
    write(dir.resolve("a.rio"), 4, 2, Compressor.NONE);
    Path csv =
        Files.write(
            dir.resolve("b.rio"),
            "label,x1,x2\n0,1.5,2.5\n1,3.5,4.5\n".getBytes(StandardCharsets.UTF_8));

    assertThatThrownBy(() -> DatasetIndexer.localOnly().index(List.of(dir + "/*.rio"), 1))
        .isInstanceOf(ServiceException.class)
        .hasMessageStartingWith("dataset file " + csv + " is not a RecordIO file (bad magic ")
        .hasMessageContaining("at offset 0 of " + csv)
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.DATASET_UNREADABLE);
  }

  @Test
  void index_onlyEmptyFiles_isDatasetUnreadable() throws IOException {
    Path empty = Files.createFile(dir.resolve("empty.rio"));
    assertThatThrownBy(() -> DatasetIndexer.localOnly().index(List.of(empty.toString()), 1))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining("no chunk")
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.DATASET_UNREADABLE);
  }

  @Test
  void index_noGlob_isDatasetUnreadable() {
    assertThatThrownBy(() -> DatasetIndexer.localOnly().index(List.of(), 1))
        .isInstanceOf(ServiceException.class)
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.DATASET_UNREADABLE);
  }
}
