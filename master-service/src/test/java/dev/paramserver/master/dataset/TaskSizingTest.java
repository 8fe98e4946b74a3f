package dev.paramserver.master.dataset;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DatasetFile;
import dev.paramserver.proto.v1.DatasetIndex;
import java.util.Collections;
import org.junit.jupiter.api.Test;

class TaskSizingTest {
  /** An index of {@code files} files of {@code chunks} chunks of {@code records} records each. */
  private static DatasetIndex index(int files, int chunks, int records) {
    DatasetIndex.Builder b = DatasetIndex.newBuilder().setChunksPerTask(1);
    for (int f = 0; f < files; f++) {
      DatasetFile.Builder file = DatasetFile.newBuilder().setPath("/data/train-" + f);
      for (int c = 0; c < chunks; c++) {
        file.addChunkOffsets(c * 1000L).addChunkLengths(1000).addChunkRecords(records);
      }
      b.addFiles(file);
    }
    return b.build();
  }

  @Test
  void groupsChunksIntoTasksOfAboutTheRecordsAsked() {
    // 1,600 chunks of 100 records: 41 chunks make 4,100 records, 40 tasks
    assertThat(TaskSizing.chunksPerTask(index(4, 400, 100), 1, 4096)).isEqualTo(41);
    assertThat(
            IndexedDataset.of(index(4, 400, 100).toBuilder().setChunksPerTask(41).build()).tasks())
        .isEqualTo(40);
  }

  @Test
  void keepsAtLeast32TasksAPass() {
    // the demo data: 120 chunks of 500 records; 9 chunks would hold 4,096 records, 3 keep 40 tasks
    assertThat(TaskSizing.chunksPerTask(index(4, 30, 500), 1, 4096)).isEqualTo(3);
    // fewer than 64 chunks: one chunk a task, as configured
    assertThat(TaskSizing.chunksPerTask(index(1, 63, 500), 1, 4096)).isEqualTo(1);
  }

  @Test
  void neverGoesBelowTheConfiguredChunksPerTask() {
    assertThat(TaskSizing.chunksPerTask(index(1, 1000, 5000), 2, 4096)).isEqualTo(2);
    assertThat(TaskSizing.chunksPerTask(index(4, 30, 500), 8, 4096)).isEqualTo(8);
  }

  @Test
  void zeroRecordsKeepsTheConfiguredValue() {
    assertThat(TaskSizing.chunksPerTask(index(4, 160, 100), 3, 0)).isEqualTo(3);
    assertThat(
            TaskSizing.chunksPerTask(
                DatasetIndex.newBuilder().addAllGlobs(Collections.emptyList()).build(), 1, 4096))
        .isEqualTo(1);
  }
}
