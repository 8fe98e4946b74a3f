package dev.paramserver.trainer.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A trainer's etcd membership across an etcd pause past its lease: it registers again and keeps the
 * locks it holds, and lock calls made after the pause succeed under the new lease (before, they
 * failed on the revoked lease and the trainer ended with exit code 1 at the export). A trainer that
 * starts while etcd is paused joins once it answers (before, its first lease grant timed out and
 * training failed), and gives up with a clear error after the rejoin timeout or at a stop.
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
        new EtcdTrainerCoordination(
            coordinator, Duration.ofSeconds(2), Duration.ofSeconds(60), () -> false);
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

  @Test
  void joinDuringAnEtcdPause_waitsForEtcd_andJoinsOnceItAnswers() throws Exception {
    EtcdTrainerCoordination coordination =
        new EtcdTrainerCoordination(
            coordinator, Duration.ofSeconds(2), Duration.ofSeconds(60), () -> false);
    CompletableFuture<Membership> joined;
    etcd.server().pause();
    try {
      joined =
          CompletableFuture.supplyAsync(
              () ->
                  coordination.join(
                      new JoinDetails(
                          "t-1", "s-1", "127.0.0.1:1", List.of(), TrainingMode.ASYNC, 0)));
      // past the first grant's call timeout (1 s) and a retry or two
      Thread.sleep(3000);
      assertThat(joined).as("a join while etcd does not answer").isNotDone();
    } finally {
      etcd.server().resume();
    }
    Membership m = joined.get(30, TimeUnit.SECONDS);
    assertThat(m.isAlive()).isTrue();
    String me = coordinator.keys().trainer("t-1");
    assertThat(leaseOf(me)).as("trainers/t-1 registered under a lease").isPositive();
    m.close();
    coordination.close();
  }

  @Test
  void joinWhileEtcdStaysPaused_failsAfterTheRejoinTimeout_orAtOnceWhenStopped() throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    EtcdTrainerCoordination bounded =
        new EtcdTrainerCoordination(
            coordinator, Duration.ofSeconds(2), Duration.ofSeconds(3), () -> false);
    EtcdTrainerCoordination stoppable =
        new EtcdTrainerCoordination(
            coordinator, Duration.ofSeconds(2), Duration.ofSeconds(60), stop::get);
    JoinDetails details =
        new JoinDetails("t-2", "s-1", "127.0.0.1:1", List.of(), TrainingMode.ASYNC, 0);
    etcd.server().pause();
    try {
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> bounded.join(details))
          .isInstanceOf(CoordinationException.class)
          .hasMessageContaining("trainer 't-2' could not join the job within PT3S")
          .hasMessageContaining("up and reachable");
      assertThat(Duration.ofNanos(System.nanoTime() - t0))
          .as("time until the join gave up")
          .isBetween(Duration.ofSeconds(3), Duration.ofSeconds(10));

      CompletableFuture<Membership> stopped =
          CompletableFuture.supplyAsync(() -> stoppable.join(details));
      Thread.sleep(1500);
      stop.set(true);
      assertThatThrownBy(() -> stopped.get(10, TimeUnit.SECONDS))
          .hasCauseInstanceOf(StoppedException.class);
    } finally {
      etcd.server().resume();
    }
    bounded.close();
    stoppable.close();
  }
}
