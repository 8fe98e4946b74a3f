package dev.paramserver.master.dataset;

import dev.paramserver.proto.v1.DatasetFile;
import dev.paramserver.proto.v1.DatasetIndex;

/**
 * How many chunks make a task. A task costs the same few round trips whatever its size (the
 * trainer's GetTask and read, the report of it, the push of its last gradients), so tasks of a few
 * hundred records spend more time on those than on training: the demo softmax's 1 + 1 job trained
 * its passes 1.5 to 2 times as fast with tasks of 4,000 records as with tasks of one 500-record
 * chunk. Tasks stay numerous enough to spread over the trainers and to bound what a lost task
 * costs: a pass keeps at least {@link #MIN_TASKS_PER_PASS} tasks.
 */
public final class TaskSizing {
  /** Grouping chunks never leaves a pass with fewer tasks than this. */
  public static final int MIN_TASKS_PER_PASS = 32;

  private TaskSizing() {}

  /**
   * The chunks per task of {@code index}: at least {@code configured}, and with {@code taskRecords}
   * above 0, as many consecutive chunks as hold about that many records (by the dataset's mean
   * records per chunk), as long as a pass keeps {@link #MIN_TASKS_PER_PASS} tasks.
   */
  public static int chunksPerTask(DatasetIndex index, int configured, long taskRecords) {
    if (taskRecords <= 0) {
      return configured;
    }
    long chunks = 0;
    long records = 0;
    for (DatasetFile f : index.getFilesList()) {
      chunks += f.getChunkRecordsCount();
      for (int r : f.getChunkRecordsList()) {
        records += r;
      }
    }
    if (chunks == 0 || records == 0) {
      return configured;
    }
    double perChunk = (double) records / chunks;
    long wanted = (long) Math.ceil(taskRecords / perChunk);
    long cap = Math.max(1, chunks / MIN_TASKS_PER_PASS);
    return (int) Math.max(configured, Math.min(wanted, cap));
  }
}
