package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.master.state.FenceLostException;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.MasterSnapshot;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A GetTask whose save reached etcd but was not confirmed (etcd paused mid-write): the call fails,
 * the master stops serving, and when it serves again the tasks of that answer, which the trainer
 * never got, go back at once instead of one task timeout after another.
 */
class UnansweredDispatchTest {
  @TempDir Path dir;

  @Test
  void tasksOfAnAnswerThatFailed_goBackAtOnce_whenTheMasterServesAgain() throws Exception {
    Path file = MasterJobLeaseTest.dataset(dir, 80, 5);
    AppliedButUnconfirmed store = new AppliedButUnconfirmed();
    MasterJob job = new MasterJob(MasterJobLeaseTest.props(1), store, Clock.systemUTC());
    job.startServing("127.0.0.1:7001");
    job.setDataset(List.of(file.toString()), "t1");
    job.getTask("t1", 0, List.of(), 0, 1);

    store.unconfirmed = true; // the next write lands, but its confirmation is lost
    assertThatThrownBy(() -> job.getTask("t2", 0, List.of(), 0, 3))
        .isInstanceOf(ServiceException.class);
    assertThat(job.isServing()).isFalse();
    store.unconfirmed = false;

    job.startServing("127.0.0.1:7001");
    assertThat(job.status().getTasks().getPending())
        .as("t1's task stays; the three handed to t2 in the failed answer are back")
        .isEqualTo(1);
    assertThat(job.holders()).containsExactly("t1");
  }

  @Test
  void getTaskRetriedAtAnotherMaster_withItsRequestId_getsTheTasksOfTheLostAnswer_notNewOnes()
      throws Exception {
    Path file = MasterJobLeaseTest.dataset(dir, 80, 5);
    AppliedButUnconfirmed store = new AppliedButUnconfirmed();
    MasterJob first = new MasterJob(MasterJobLeaseTest.props(1), store, Clock.systemUTC());
    first.startServing("127.0.0.1:7001");
    first.setDataset(List.of(file.toString()), "t1");
    store.unconfirmed = true; // saved, but the answer never reaches t2
    assertThatThrownBy(() -> first.getTask("t2", 0, List.of(), 0, 3, "request-1"))
        .isInstanceOf(ServiceException.class);
    store.unconfirmed = false;
    MasterSnapshot saved = store.loadSnapshot().orElseThrow();
    List<String> lost = new ArrayList<>();
    for (int id = 0; id < saved.getTasks().getHoldersCount(); id++) {
      if (saved.getTasks().getHolders(id).equals("t2")) {
        assertThat(saved.getTasks().getRequests(id)).isEqualTo("request-1");
        lost.add(id + "@" + saved.getTasks().getEpochs(id));
      }
    }
    assertThat(lost).as("tasks of the lost answer, saved").hasSize(3);

    // another master takes over (this one never saw the answer fail) and the trainer retries
    MasterJob second = new MasterJob(MasterJobLeaseTest.props(1), store, Clock.systemUTC());
    second.startServing("127.0.0.1:7002");
    GetTaskResponse retry = second.getTask("t2", 0, List.of(), 0, 3, "request-1");
    assertThat(retry.getOutcome()).isEqualTo(GetTaskResponse.Outcome.TASK);
    List<String> got = new ArrayList<>();
    got.add(retry.getTask().getId() + "@" + retry.getTask().getEpoch());
    retry.getMoreTasksList().forEach(t -> got.add(t.getId() + "@" + t.getEpoch()));
    assertThat(got).as("the retry's answer").containsExactlyInAnyOrderElementsOf(lost);
    assertThat(second.status().getTasks().getPending())
        .as("no task handed out beside them")
        .isEqualTo(3);

    GetTaskResponse next = second.getTask("t2", 0, List.of(), 0, 1, "request-2");
    assertThat(next.getTask().getId() + "@" + next.getTask().getEpoch())
        .as("a new request gets a new task")
        .isNotIn(lost);
    MasterSnapshot now = store.loadSnapshot().orElseThrow();
    assertThat(now.getTasks().getRequestsList()).contains("request-1", "request-2");
  }

  @Test
  void requestIdsOfPendingTasks_encodeAsTheSnapshotBuilds_andSurviveARestore() throws Exception {
    TaskQueue q = new TaskQueue(new long[] {10, 10, 10, 10}, 2, 3, Clock.systemUTC());
    assertThat(MasterSnapshot.parseFrom(q.snapshotBytes()).getTasks().getRequestsCount())
        .as("no request ids: the field is not written")
        .isZero();
    Dispatch d = q.next("t1", 0, java.time.Duration.ofSeconds(30));
    q.handedOutUnder(d.taskId(), "r-1");
    q.next("t2", 0, java.time.Duration.ofSeconds(30));
    MasterSnapshot parsed = MasterSnapshot.parseFrom(q.snapshotBytes());
    assertThat(parsed).isEqualTo(q.snapshot());
    TaskQueue restored =
        TaskQueue.restore(parsed, new long[] {10, 10, 10, 10}, 3, Clock.systemUTC());
    assertThat(restored.pendingUnder("t1", "r-1"))
        .extracting(Dispatch::taskId)
        .containsExactly(d.taskId());
    assertThat(restored.pendingUnder("t2", "r-1")).isEmpty();
    assertThat(restored.pendingUnder("t1", "")).isEmpty();
  }

  /** Keeps what is saved; while {@code unconfirmed}, keeps it and then reports the save lost. */
  private static final class AppliedButUnconfirmed implements JobStore {
    volatile boolean unconfirmed;
    private volatile DatasetIndex dataset;
    private volatile byte[] snapshot;

    @Override
    public Optional<DatasetIndex> loadDataset() {
      return Optional.ofNullable(dataset);
    }

    @Override
    public Optional<MasterSnapshot> loadSnapshot() {
      try {
        return snapshot == null
            ? Optional.empty()
            : Optional.of(MasterSnapshot.parseFrom(snapshot));
      } catch (InvalidProtocolBufferException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void saveDataset(DatasetIndex index) {
      dataset = index;
    }

    @Override
    public long saveSnapshot(byte[] serializedSnapshot) {
      snapshot = serializedSnapshot.clone();
      if (unconfirmed) {
        throw new FenceLostException("etcd did not confirm the write of the master snapshot");
      }
      return serializedSnapshot.length;
    }
  }
}
