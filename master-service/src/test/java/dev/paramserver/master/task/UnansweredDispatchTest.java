package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.master.state.FenceLostException;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.rpc.ServiceException;
import java.nio.file.Path;
import java.time.Clock;
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
