package dev.paramserver.trainer.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A trainer's etcd membership across an etcd pause past its lease: it registers again and keeps the
 * locks it holds, and lock calls made after the pause succeed under the new lease (before, they
 * failed on the revoked lease and the trainer ended with exit code 1 at the export).
 */
class EtcdMembershipTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;

  @BeforeEach
  void connect() throws InterruptedException {
    coordinator =
        EtcdCoordinator.connect(
            new EtcdSettings(
                List.of(etcd.endpoint()),
                etcd.uniqueJob(),
                Duration.ofSeconds(1),
                null,
                null,
                null));
    assertThat(coordinator.awaitConnected(Duration.ofSeconds(30))).isTrue();
  }

  @AfterEach
  void close() {
    coordinator.close();
  }

  private long leaseOf(String key) {
    return coordinator.kv().get(key).map(KeyValueStore.KeyValue::leaseId).orElse(-1L);
  }

  @Test
  void etcdPausedPastTheLease_trainerRegistersAgain_keepsItsLocks_andTakesNewOnes() {
    EtcdTrainerCoordination coordination =
        new EtcdTrainerCoordination(coordinator, Duration.ofSeconds(2), Duration.ofSeconds(60));
    Membership m =
        coordination.join(
            new JoinDetails("t-0", "s-1", "127.0.0.1:1", List.of(), TrainingMode.ASYNC, 0));
    String me = coordinator.keys().trainer("t-0");
    String eval0 = coordinator.keys().evaluator(0);
    assertThat(m.locks().claimEvaluation(0)).isTrue();
    long first = leaseOf(me);

    etcd.server().pause();
    try {
      Poll.until(
          Duration.ofSeconds(10),
          () -> ((EtcdMembership) m).isRenewing(),
          "the membership's lease counted lost while etcd is paused");
    } finally {
      etcd.server().resume();
    }
    // the first lock call after the pause waits for the new lease instead of failing
    assertThat(m.locks().claimExport()).as("export lock under the new lease").isTrue();
    assertThat(m.isAlive()).isTrue();
    long renewed = leaseOf(me);
    assertThat(renewed).as("trainers/t-0 under a new lease").isPositive().isNotEqualTo(first);
    Poll.until(
        Duration.ofSeconds(10),
        () -> leaseOf(eval0) == renewed && leaseOf(coordinator.keys().exportLock()) == renewed,
        "eval/0 and export/lock under the new lease");
    assertThat(m.locks().claimEvaluation(1)).isTrue();

    m.close();
    assertThat(coordinator.kv().get(me)).as("leaving revokes the registration").isEmpty();
    coordination.close();
  }
}
