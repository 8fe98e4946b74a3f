package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.master.MasterProperties;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several tasks in one GetTask answer (a lease): the k-th task of an answer gets k task timeouts,
 * since the trainer starts it only after the ones before it, so a lease does not time out while its
 * tasks wait their turn.
 */
class MasterJobLeaseTest {
  @TempDir Path dir;

  @Test
  void extraTasksOfAnAnswer_getOneMoreTimeoutEach() throws Exception {
    // 80 records in chunks of 5, one chunk a task: 16 tasks
    Path file = dir.resolve("train-0.rio");
    try (RecordWriter w = RecordWriter.create(file, Compressor.NONE, 5)) {
      for (int i = 0; i < 80; i++) {
        w.write(new byte[] {(byte) i});
      }
    }
    MasterProperties props =
        new MasterProperties(
            1,
            1,
            Duration.ofSeconds(60),
            3,
            Duration.ofSeconds(1),
            Duration.ofMillis(200),
            MasterProperties.AdaptiveTimeout.disabled(),
            0,
            MasterProperties.Console.defaults(),
            new MasterProperties.Tracking(null, null),
            0);
    MutableClock clock = new MutableClock(1_000_000);
    MasterJob job = new MasterJob(props, JobStore.NONE, clock);
    job.startServing("127.0.0.1:7001");
    job.setDataset(List.of(file.toString()), "t1");

    GetTaskResponse lease = job.getTask("t1", 0, List.of(), 0, 3);
    assertThat(lease.getMoreTasksCount()).isEqualTo(2);
    Task second = lease.getMoreTasks(0);
    Task third = lease.getMoreTasks(1);

    clock.advance(Duration.ofSeconds(61));
    assertThat(job.expireOverdue()).as("only the first task is overdue after one timeout").isOne();
    clock.advance(Duration.ofSeconds(60));
    assertThat(job.expireOverdue()).as("the second after two").isOne();
    assertThat(job.taskFinished("t1", third.getId(), third.getEpoch()))
        .as("the third, within three timeouts, is still held")
        .isTrue();
    assertThat(job.taskFinished("t1", second.getId(), second.getEpoch()))
        .as("the second was taken back")
        .isFalse();
  }
}
