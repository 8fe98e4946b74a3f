package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.testsupport.EtcdExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A trainer's registration in a real etcd ends, or a new process takes its name: the tasks it held
 * come back at once; a trainer that never registered keeps its tasks until their deadlines.
 */
class TrainerDeparturesTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  @TempDir Path dir;
  private EtcdCoordinator coordinator;
  private MasterJob job;
  private TrainerDepartures departures;

  @BeforeEach
  void start() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    job = MasterJobLeaseTest.job(dir, Clock.systemUTC());
    departures =
        new TrainerDepartures(job, coordinator.kv(), coordinator.keys().trainersPrefix(), 0);
  }

  @AfterEach
  void stop() {
    departures.stop();
    coordinator.close();
  }

  private Lease register(String trainer) {
    Lease lease = coordinator.grantLease(Duration.ofSeconds(5));
    coordinator
        .kv()
        .put(
            coordinator.keys().trainer(trainer),
            "127.0.0.1:0".getBytes(StandardCharsets.UTF_8),
            lease);
    return lease;
  }

  private long pending() {
    return job.status().getTasks().getPending();
  }

  @Test
  void endedRegistration_orANewProcessUnderTheName_releasesItsTasksAtOnce() {
    Lease gone = register("gone");
    register("replaced");
    departures.start();
    GetTaskResponse goneLease = job.getTask("gone", 0, List.of(), 0, 3);
    assertThat(goneLease.getMoreTasksCount()).isEqualTo(2);
    job.getTask("replaced", 0, List.of(), 0, 1);
    job.getTask("unregistered", 0, List.of(), 0, 1);
    assertThat(pending()).isEqualTo(5);

    gone.revoke();
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(pending())
                    .as("the three tasks of the trainer whose registration ended are back")
                    .isEqualTo(2));
    assertThat(
            job.taskFinished("gone", goneLease.getTask().getId(), goneLease.getTask().getEpoch()))
        .as("its late report is stale")
        .isFalse();

    register("replaced"); // a restarted process: the same name under a new lease
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(pending())
                    .as("the task of the replaced process is back; the unregistered one's is not")
                    .isEqualTo(1));
    assertThat(job.status().getPasses(0).getTimeouts())
        .as("tasks taken back count as timeouts of their pass")
        .isEqualTo(4);
  }

  @Test
  void aMasterStartingToServe_takesBackAtOnceTheTasksOfEveryHolderNoLongerRegistered()
      throws Exception {
    Path file = MasterJobLeaseTest.dataset(dir, 80, 5);
    MemoryStore store = new MemoryStore();
    MasterJob leader = new MasterJob(MasterJobLeaseTest.props(1), store, Clock.systemUTC());
    TrainerDepartures watching =
        new TrainerDepartures(leader, coordinator.kv(), coordinator.keys().trainersPrefix(), 0);
    watching.start();
    try {
      leader.startServing("127.0.0.1:7001");
      leader.setDataset(List.of(file.toString()), "t1");
      Lease killed = register("killed");
      register("alive");
      leader.getTask("killed", 0, List.of(), 0, 3);
      leader.getTask("alive", 0, List.of(), 0, 2);
      leader.getTask("unregistered", 0, List.of(), 0, 1);
      assertThat(leader.status().getTasks().getPending()).isEqualTo(6);

      // the master loses its lease (an etcd outage): while it does not serve, the killed trainer's
      // registration ends, and nobody acts on it
      leader.stopServing();
      killed.revoke();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> coordinator.kv().get(coordinator.keys().trainer("killed")).isEmpty());

      leader.startServing("127.0.0.1:7001");
      assertThat(leader.status().getTasks().getPending())
          .as("at once, before any call: the departed trainer's 3 tasks are back, 3 stay")
          .isEqualTo(3);
      assertThat(leader.holders())
          .as("a holder never seen registered keeps its task until its deadline")
          .containsExactlyInAnyOrder("alive", "unregistered");
    } finally {
      watching.stop();
    }
  }

  /** Keeps the dataset and the latest snapshot, as etcd does across a change of leader. */
  private static final class MemoryStore implements JobStore {
    private volatile DatasetIndex dataset;
    private volatile byte[] snapshot;

    @Override
    public Optional<DatasetIndex> loadDataset() {
      return Optional.ofNullable(dataset);
    }

    @Override
    public Optional<MasterSnapshot> loadSnapshot() {
      byte[] s = snapshot;
      if (s == null) {
        return Optional.empty();
      }
      try {
        return Optional.of(MasterSnapshot.parseFrom(s));
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
      return serializedSnapshot.length;
    }
  }

  @Test
  void minTrainers_theFirstTaskWaitsForTheRegistrations_thenTheJobGoesOnWithWhoeverIsThere()
      throws Exception {
    departures.stop();
    MasterJob waiting =
        MasterJobLeaseTest.job(dir, Clock.systemUTC(), MasterJobLeaseTest.props(1, 2));
    TrainerDepartures counted =
        new TrainerDepartures(waiting, coordinator.kv(), coordinator.keys().trainersPrefix(), 0);
    counted.start();
    try {
      Lease first = register("first");
      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () ->
                  assertThat(waiting.getTask("first", 0).getReason())
                      .contains("once 2 trainers are registered")
                      .contains("1 are"));
      GetTaskResponse early = waiting.getTask("first", 0);
      assertThat(early.getOutcome()).isEqualTo(GetTaskResponse.Outcome.WAIT);
      assertThat(early.getRetryAfterMs()).as("a retry hint").isPositive();
      assertThat(waiting.status().getTasks().getPending()).isZero();

      register("second");
      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () ->
                  assertThat(waiting.getTask("first", 0).getOutcome())
                      .isEqualTo(GetTaskResponse.Outcome.TASK));
      first.revoke();
      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () ->
                  assertThat(waiting.getTask("second", 0).getOutcome())
                      .as("a started job does not wait again when a trainer leaves")
                      .isEqualTo(GetTaskResponse.Outcome.TASK));
    } finally {
      counted.stop();
    }
  }
}
