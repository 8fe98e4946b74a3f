package dev.paramserver.master.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.Lease;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.dataset.DatasetIndexer;
import dev.paramserver.master.dataset.IndexedDataset;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.master.task.TaskQueue;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import dev.paramserver.testsupport.EtcdExtension;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The job state in a real etcd: fenced writes, compression and parts, 100,000 chunks. */
class EtcdJobStoreTest {
  private static final Logger log = LoggerFactory.getLogger(EtcdJobStoreTest.class);
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  @TempDir Path dir;
  private WonLeadership leader;
  private EtcdCoordinator coordinator;
  private Lease lease;
  private EtcdJobStore store;

  @BeforeEach
  void lead() throws InterruptedException {
    leader = new WonLeadership(etcd);
    coordinator = leader.coordinator;
    lease = leader.lease;
    store = leader.store();
  }

  @AfterEach
  void close() {
    leader.close();
  }

  private Path writeChunks(String name, int chunks) throws IOException {
    Path file = dir.resolve(name);
    try (RecordWriter w = RecordWriter.create(file, Compressor.NONE, 1)) {
      for (int i = 0; i < chunks; i++) {
        w.write(new byte[] {(byte) i});
      }
    }
    return file;
  }

  @Test
  void hundredThousandChunks_datasetAndSnapshotRoundTripUnderTheRequestLimit() throws IOException {
    Path file = writeChunks("big.rio", 100_000);
    DatasetIndex index = DatasetIndexer.localOnly().index(List.of(file.toString()), 1);
    IndexedDataset dataset = IndexedDataset.of(index);
    assertThat(dataset.chunks()).isEqualTo(100_000);
    assertThat(dataset.tasks()).isEqualTo(100_000);

    store.saveDataset(index);
    TaskQueue queue = new TaskQueue(dataset.taskRecords(), 3, 3, Clock.systemUTC());
    for (int i = 0; i < 2_000; i++) {
      queue.next("trainer-" + (i % 8), 0, Duration.ofSeconds(60));
    }
    for (int i = 0; i < 1_000; i++) {
      queue.finished(i, 1);
    }
    MasterSnapshot snapshot = queue.snapshot();
    long start = System.nanoTime();
    long bytes = store.saveSnapshot(queue.snapshotBytes());
    long saveMs = (System.nanoTime() - start) / 1_000_000;
    log.info(
        "100,000-task snapshot: {} bytes raw, {} bytes compressed, saved in {} ms",
        snapshot.getSerializedSize(),
        bytes,
        saveMs);
    System.out.println(
        "SNAPSHOT_SIZE tasks=100000 raw_bytes="
            + snapshot.getSerializedSize()
            + " compressed_bytes="
            + bytes
            + " save_ms="
            + saveMs);
    assertThat(bytes).isLessThan(EtcdJobStore.MAX_SNAPSHOT_BYTES);
    // the cost of one change in steady state: copy, change, snapshot, compress, fenced write
    int changes = 10;
    start = System.nanoTime();
    for (int i = 0; i < changes; i++) {
      TaskQueue copy = queue.copy();
      copy.next("trainer-x", 0, Duration.ofSeconds(60));
      store.saveSnapshot(copy.snapshotBytes());
      queue = copy;
    }
    System.out.println(
        "SNAPSHOT_CHANGE tasks=100000 mean_ms="
            + (System.nanoTime() - start) / 1_000_000 / changes);

    EtcdJobStore reader = new EtcdJobStore(coordinator.kv(), coordinator.keys());
    DatasetIndex loaded = reader.loadDataset().orElseThrow();
    assertThat(loaded).isEqualTo(index);
    MasterSnapshot loadedSnapshot = reader.loadSnapshot().orElseThrow();
    assertThat(loadedSnapshot.getDatasetRevision())
        .as("the snapshot names the revision of the dataset it goes with")
        .isEqualTo(
            coordinator.kv().get(coordinator.keys().masterDataset()).orElseThrow().modRevision());
    TaskQueue restored =
        TaskQueue.restore(
            loadedSnapshot, IndexedDataset.of(loaded).taskRecords(), 3, Clock.systemUTC());
    assertThat(restored.status()).isEqualTo(queue.status());
    assertThat(restored.status().getTasks().getPending()).isEqualTo(1_000 + changes);
    assertThat(restored.status().getTasks().getDone()).isEqualTo(1_000);
  }

  @Test
  void snapshotWithFewerParts_deletesTheStaleParts() {
    // a second part left by an earlier, larger snapshot
    coordinator.kv().put(coordinator.keys().masterState() + "/0", new byte[] {1});
    coordinator.kv().put(coordinator.keys().masterState() + "/1", new byte[] {2});
    store.saveSnapshot(MasterSnapshot.newBuilder().setPass(2).build());
    assertThat(coordinator.kv().getPrefix(coordinator.keys().masterState() + "/")).hasSize(1);
    assertThat(store.loadSnapshot().orElseThrow().getPass()).isEqualTo(2);
  }

  @Test
  void nothingSaved_loadsEmpty() {
    assertThat(store.loadDataset()).isEmpty();
    assertThat(store.loadSnapshot()).isEmpty();
  }

  @Test
  void leaseRevokedUnderTheLeader_nextWriteIsRefused_andTheJobAnswersNotLeader()
      throws IOException {
    Path file = writeChunks("small.rio", 4);
    MasterJob job = new MasterJob(MasterProperties.defaults(), store, Clock.systemUTC());
    job.startServing("test:1");
    job.setDataset(List.of(file.toString()), "t1");
    assertThat(job.getTask("t1", 0).getOutcome()).isEqualTo(GetTaskResponse.Outcome.TASK);
    long stepDowns = countStepDowns(job);

    // the lease expires under the leader (revoked behind its back, as after a long pause)
    lease.revoke();

    assertThatThrownBy(() -> job.getTask("t2", 0))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining("lost its leadership")
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.NOT_LEADER);
    assertThat(countStepDowns(job)).isEqualTo(stepDowns + 1);
    assertThat(job.isServing()).isFalse();
    assertThatThrownBy(() -> job.taskFinished("t1", 0, 1))
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.NOT_LEADER);
    // the refused write left the state in etcd as it was: task 1 was never handed out
    EtcdJobStore reader = new EtcdJobStore(coordinator.kv(), coordinator.keys());
    MasterSnapshot s = reader.loadSnapshot().orElseThrow();
    assertThat(s.getTasks().getEpochs(0)).isEqualTo(1);
    assertThat(s.getTasks().getEpochs(1)).isEqualTo(0);
    assertThatThrownBy(() -> store.saveSnapshot(s)).isInstanceOf(FenceLostException.class);
  }

  private final java.util.concurrent.atomic.AtomicLong stepDownCount =
      new java.util.concurrent.atomic.AtomicLong();

  private long countStepDowns(MasterJob job) {
    job.setOnFenceLost(stepDownCount::incrementAndGet);
    return stepDownCount.get();
  }
}
