package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.pserver.replication.harness.FaultyNetwork.Fault;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A push is acknowledged only by the shard's owner (issue 26): a primary whose lease etcd ended
 * while it was paused acknowledges none of the pushes it still had in hand or receives afterwards,
 * and a primary whose backup does not answer confirms with etcd that it still owns the shard before
 * it answers a push alone.
 */
@Timeout(60)
class NoAcknowledgementFromNonOwnerTest {
  private static final long SEED = 26;
  private static final Fault HELD = new Fault(FaultyNetwork.Kind.HOLD, 30_000);

  /** Every Replicate call after the first {@code passing} is held until the network heals. */
  private static FaultyNetwork holdingAfter(int passing) {
    List<Fault> plan = new ArrayList<>(Collections.nCopies(passing, Fault.PASS));
    plan.addAll(Collections.nCopies(100, HELD));
    return new FaultyNetwork(Map.of("Replicate", plan), 1000, SEED);
  }

  @Test
  void pausedPrimary_whoseBackupTookOver_acknowledgesNoneOfItsQueuedOrLaterPushes()
      throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = holdingAfter(2);
    FaultyNetwork backupNetwork = FaultyNetwork.reliable();
    try (etcd;
        network;
        backupNetwork;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, Duration.ofSeconds(5));
        InProcessPserver b =
            new InProcessPserver("ps-b", etcd, backupNetwork, Duration.ofSeconds(5))) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      b.registerAsBackup();
      Poll.until(
          Duration.ofSeconds(10),
          Duration.ofMillis(5),
          () -> a.replication.backupSynced() && b.lifecycle.role() == ShardRole.BACKUP_SYNCED,
          "ps-b synced");
      // two pushes replicated and acknowledged
      a.shard.pushOutcome(Trainers.push(SEED, 0, 1));
      a.shard.pushOutcome(Trainers.push(SEED, 1, 1));

      // pushes the primary takes in before its pause: applied and logged there, their records held
      // on the way to the backup
      ConcurrentLinkedQueue<String> acknowledged = new ConcurrentLinkedQueue<>();
      ConcurrentLinkedQueue<Throwable> refused = new ConcurrentLinkedQueue<>();
      List<Thread> queued = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        int trainer = t;
        Thread th =
            new Thread(
                () -> {
                  try {
                    a.shard.pushOutcome(Trainers.push(SEED, trainer, 2));
                    acknowledged.add("t" + trainer + " step 2");
                  } catch (RuntimeException e) {
                    refused.add(e);
                  }
                });
        th.start();
        queued.add(th);
      }
      Poll.until(
          Duration.ofSeconds(10), Duration.ofMillis(5), () -> a.shard.step() == 5, "3 applied");

      // the pause: etcd ends the primary's lease, the backup takes the shard over
      a.leaseExpiresWhilePaused();
      Poll.until(Duration.ofSeconds(10), Duration.ofMillis(5), b::promoted, "ps-b took over");
      long takenOverAt = b.shard.step();

      // the primary resumes: its held records go out, and a trainer that did not look etcd up again
      // pushes to it once more
      network.heal();
      for (Thread th : queued) {
        th.join(20_000);
      }
      assertThat(acknowledged).as("queued pushes acknowledged by the deposed primary").isEmpty();
      assertThatThrownBy(() -> a.shard.pushOutcome(Trainers.push(SEED, 0, 3)))
          .as("a later push to the deposed primary")
          .isInstanceOfSatisfying(
              ServiceException.class,
              e -> assertThat(e.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN));
      assertThat(refused)
          .hasSize(3)
          .allSatisfy(
              e ->
                  assertThat(e)
                      .isInstanceOfSatisfying(
                          ServiceException.class,
                          s -> assertThat(s.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN)));
      assertThat(a.lifecycle.role()).isEqualTo(ShardRole.DEPOSED);
      assertThat(a.unreplicated()).isZero();
      // the refused pushes are not on the new primary: acknowledging them would have lost them
      assertThat(takenOverAt).isEqualTo(2);
      for (int t = 0; t < 3; t++) {
        assertThat(b.shard.pushOutcome(Trainers.push(SEED, t, 2)).duplicate())
            .as("t" + t + "'s retry on the new primary")
            .isFalse();
      }
      assertThat(b.shard.step()).isEqualTo(5);
    }
  }

  @Test
  void lateBackup_primaryAnswersAloneOnlyAfterEtcdConfirmsItsOwnership() throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = holdingAfter(0);
    FaultyNetwork backupNetwork = FaultyNetwork.reliable();
    try (etcd;
        network;
        backupNetwork;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, Duration.ofMillis(200));
        InProcessPserver b =
            new InProcessPserver("ps-b", etcd, backupNetwork, Duration.ofMillis(200))) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      b.registerAsBackup();
      Poll.until(
          Duration.ofSeconds(10),
          Duration.ofMillis(5),
          () -> a.replication.backupSynced(),
          "ps-b synced");
      String key = etcd.keys().ps(InProcessPserver.INDEX);

      // the backup does not answer: answered alone after a read of ps/0, and counted
      long reads = etcd.reads(key);
      assertThat(a.shard.pushOutcome(Trainers.push(SEED, 0, 1)).duplicate()).isFalse();
      assertThat(etcd.reads(key)).as("reads of " + key).isGreaterThan(reads);
      assertThat(a.unreplicated()).isEqualTo(1);

      // etcd does not answer: not acknowledged, not counted, still the primary
      etcd.unreachable(true);
      assertThatThrownBy(() -> a.shard.pushOutcome(Trainers.push(SEED, 0, 2)))
          .isInstanceOfSatisfying(
              ServiceException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN);
                assertThat(e.getMessage()).contains("could not confirm");
              });
      assertThat(a.unreplicated()).isEqualTo(1);
      assertThat(a.lifecycle.role()).isEqualTo(ShardRole.PRIMARY);
      etcd.unreachable(false);

      // etcd ended the lease (the primary did not notice): not acknowledged, and it steps down
      a.leaseExpiresWhilePaused();
      assertThatThrownBy(() -> a.shard.pushOutcome(Trainers.push(SEED, 0, 3)))
          .isInstanceOfSatisfying(
              ServiceException.class,
              e -> assertThat(e.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN));
      assertThat(a.unreplicated()).isEqualTo(1);
      assertThat(a.lifecycle.role()).isEqualTo(ShardRole.DEPOSED);
    }
  }
}
