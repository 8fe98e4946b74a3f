package dev.paramserver.trainer.master;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.coordination.EtcdMasterLocator;
import dev.paramserver.trainer.testing.FakeMaster;
import dev.paramserver.trainer.testing.InProcessChannels;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The trainer's master client across a master failover, over in-process gRPC against fake masters
 * (real etcd for {@code master/addr}): a new leader at a new address, the same address refusing as
 * NOT_LEADER then answering, and a stopping trainer's last report.
 */
@Timeout(30)
class MasterFailoverTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private FakeMaster first;
  private FakeMaster second;
  private final AtomicBoolean stop = new AtomicBoolean();
  private MasterClient client;
  private MasterReports reports;

  @BeforeEach
  void start() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    first = new FakeMaster();
    second = new FakeMaster();
    point(first);
    client =
        new MasterClient(
            new EtcdMasterLocator(coordinator),
            Duration.ofSeconds(5),
            new Retry(Duration.ofMillis(20), Duration.ofMillis(50), stop::get),
            new InProcessChannels());
    reports = new MasterReports(client, "t-failover");
  }

  private void point(FakeMaster master) {
    coordinator.kv().put(coordinator.keys().masterAddr(), master.address().getBytes(UTF_8));
  }

  @AfterEach
  void stop() throws Exception {
    if (client != null) {
      client.close();
    }
    first.close();
    second.close();
    coordinator.close();
  }

  @Test
  void newLeaderAtANewAddress_isFoundThroughEtcd() {
    second.addTask(5, List.of());
    first.notLeaderFor(1_000, () -> point(second));

    GetTaskResponse resp = reports.getTask(0);

    assertThat(resp.getOutcome()).isEqualTo(GetTaskResponse.Outcome.TASK);
    assertThat(resp.getTask().getId()).isEqualTo(5);
    assertThat(client.address()).contains(second.address());
    assertThat(second.calls()).isEqualTo(1);
  }

  @Test
  void sameAddressNotLeader_thenAvailable_isRetriedWithBackoff() {
    first.addTask(9, List.of());
    first.notLeaderFor(3, () -> {});

    GetTaskResponse resp = reports.getTask(0);

    assertThat(resp.getTask().getId()).isEqualTo(9);
    assertThat(first.calls()).isEqualTo(4);
  }

  @Test
  void stoppingTrainer_givesUpRetrying_butStillHandsItsTaskBackOnce() {
    Task task = first.addTask(3, List.of());
    stop.set(true);

    assertThatThrownBy(() -> reports.getTask(0))
        .isInstanceOf(StoppedException.class)
        .hasMessageContaining("GetTask");
    assertThat(reports.handBack(task)).isTrue();

    assertThat(first.failed).hasSize(1);
    assertThat(first.failed.peek().getHandedBack()).isTrue();
    assertThat(first.failed.peek().getTaskId()).isEqualTo(3);
    assertThat(first.failed.peek().getReason()).contains("t-failover is shutting down");
  }

  @Test
  void handBack_toAMasterThatRefuses_isOneAttemptOnly() {
    Task task = first.addTask(4, List.of());
    first.notLeaderFor(10, () -> {});

    assertThat(reports.handBack(task)).isFalse();
    assertThat(first.calls()).isEqualTo(1);
  }

  @Test
  void reports_carryTheTrainerIdAndTheTaskEpoch() {
    Task task = first.addTask(8, List.of());
    reports.setDataset(List.of("/data/train-*.recordio"));
    reports.finished(task, 42);
    reports.failed(task, "unreadable");
    reports.evaluation(0, 0.5, 0.9, 100, Double.NaN);

    assertThat(first.datasets.peek().getGlobsList()).containsExactly("/data/train-*.recordio");
    assertThat(first.datasets.peek().getTrainerId()).isEqualTo("t-failover");
    assertThat(first.finished.peek().getRecords()).isEqualTo(42);
    assertThat(first.finished.peek().getEpoch()).isEqualTo(1);
    assertThat(first.failed.peek().getHandedBack()).isFalse();
    assertThat(first.failed.peek().getReason()).isEqualTo("unreadable");
    assertThat(first.evaluations.peek().getAccuracy()).isEqualTo(0.9);
    assertThat(first.evaluations.peek().getAuc()).isZero();
  }
}
