package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several tasks in one GetTask answer (a lease): the k-th task of an answer gets k task timeouts,
 * since the trainer starts it only after the ones before it, so a lease does not time out while its
 * tasks wait their turn.
 */
class MasterJobLeaseTest {
  @TempDir Path dir;

  private final MutableClock clock = new MutableClock(1_000_000);

  private MasterJob job() throws Exception {
    return job(dir, clock);
  }

  /** A serving job of 16 one-chunk tasks, a task timeout of 60 s, leases of up to 3 tasks. */
  static MasterJob job(Path dir, Clock clock) throws Exception {
    return job(dir, clock, props(1, 0));
  }

  /** {@link #job(Path, Clock)} with {@code props}. */
  static MasterJob job(Path dir, Clock clock, MasterProperties props) throws Exception {
    // 80 records in chunks of 5, one chunk a task: 16 tasks
    Path file = dataset(dir, 80, 5);
    MasterJob job = new MasterJob(props, JobStore.NONE, clock);
    job.startServing("127.0.0.1:7001");
    job.setDataset(List.of(file.toString()), "t1");
    return job;
  }

  /** A RecordIO file of {@code records} one-byte records, {@code perChunk} a chunk. */
  static Path dataset(Path dir, int records, int perChunk) throws Exception {
    Path file = dir.resolve("train-0.rio");
    try (RecordWriter w = RecordWriter.create(file, Compressor.NONE, perChunk)) {
      for (int i = 0; i < records; i++) {
        w.write(new byte[] {(byte) i});
      }
    }
    return file;
  }

  /** {@code passes}, one chunk a task, a task timeout of 60 s, 3 failures, wait-retry 200 ms. */
  static MasterProperties props(int passes) {
    return props(passes, 0);
  }

  /** {@link #props(int)}, the first task waiting for {@code minTrainers} registered trainers. */
  static MasterProperties props(int passes, int minTrainers) {
    return new MasterProperties(
        passes,
        1,
        Duration.ofSeconds(60),
        3,
        Duration.ofSeconds(1),
        Duration.ofMillis(200),
        MasterProperties.AdaptiveTimeout.disabled(),
        0,
        MasterProperties.Console.defaults(),
        MasterProperties.Tracking.off(),
        0,
        minTrainers);
  }

  @Test
  void extraTasksOfAnAnswer_getOneMoreTimeoutEach() throws Exception {
    MasterJob job = job();
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

  @Test
  void aDepartedTrainersLease_comesBackAtOnce_notOneTimeoutATask() throws Exception {
    MasterJob job = job();
    GetTaskResponse lease = job.getTask("t1", 0, List.of(), 0, 3);
    assertThat(lease.getMoreTasksCount()).isEqualTo(2);
    GetTaskResponse other = job.getTask("t2", 0, List.of(), 0, 1);

    assertThat(job.trainerGone("t1", "is gone (a test)"))
        .as("every task of the departed trainer's lease, before any deadline")
        .isEqualTo(3);
    assertThat(job.trainerGone("t1", "is gone (a test)")).as("nothing left to take back").isZero();
    assertThat(job.taskFinished("t1", lease.getTask().getId(), lease.getTask().getEpoch()))
        .as("a late report of the departed trainer is stale")
        .isFalse();
    assertThat(job.taskFinished("t2", other.getTask().getId(), other.getTask().getEpoch()))
        .as("the other trainer's task is untouched")
        .isTrue();
    Set<Long> released =
        Set.of(
            lease.getTask().getId(), lease.getMoreTasks(0).getId(), lease.getMoreTasks(1).getId());
    Set<Long> handedOut = new HashSet<>();
    for (int i = 0; i < 15; i++) {
      GetTaskResponse next = job.getTask("t2", 0, List.of(), 0, 1);
      assertThat(next.getOutcome()).isEqualTo(GetTaskResponse.Outcome.TASK);
      handedOut.add(next.getTask().getId());
    }
    assertThat(handedOut)
        .as("the tasks taken back are handed out again, with no clock advance")
        .containsAll(released);
  }
}
