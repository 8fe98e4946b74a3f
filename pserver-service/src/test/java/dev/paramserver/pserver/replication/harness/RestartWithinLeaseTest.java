package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.testsupport.Poll;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The double fault of a replicated shard with a quick restart: the backup is gone, the primary
 * answers pushes alone on its log, then is killed ({@code kill -9}, disk intact) and restarted (by
 * its supervisor, Kubernetes) before etcd ended its lease, so its earlier process's lease still
 * holds {@code ps/0}. The restarted pserver must not register as the backup of its own shard (which
 * set its log aside, and the shard then waited for a log no pserver would replay): it waits for
 * etcd to end the earlier lease, claims the shard back and serves every acknowledged push from its
 * log.
 */
@Timeout(60)
class RestartWithinLeaseTest {
  private static final long SEED = 45;
  private static final Duration TIMEOUT = Duration.ofSeconds(1);
  private static final int REPLICATED = 3;
  private static final int ALONE = 3;

  /** Pushes, the backup killed, more pushes answered alone: every push acknowledged, in order. */
  private static List<PushGradientsRequest> answerAloneWithTheBackupGone(
      InMemoryCoordinator etcd, InProcessPserver a, InProcessPserver b) {
    a.registerAsPrimary();
    Trainers.initialise(a.shard);
    a.checkpoints.checkpointNow();
    b.registerAsBackup();
    Poll.until(
        Duration.ofSeconds(10),
        Duration.ofMillis(5),
        () -> a.replication.backupSynced() && b.lifecycle.role() == ShardRole.BACKUP_SYNCED,
        "ps-b synced");
    List<PushGradientsRequest> acknowledged = new ArrayList<>();
    for (int step = 1; step <= REPLICATED + ALONE; step++) {
      if (step == REPLICATED + 1) {
        // the backup is killed: its lease ends, ps_backup/0 vanishes
        b.crash();
        Poll.until(
            Duration.ofSeconds(10),
            Duration.ofMillis(5),
            () -> !a.replication.backupSynced(),
            "ps-a saw its backup go");
      }
      PushGradientsRequest push = Trainers.push(SEED, 0, step);
      assertThat(a.shard.pushOutcome(push).duplicate()).isFalse();
      acknowledged.add(push);
    }
    ShardSyncRecord record =
        ShardSyncRecord.read(etcd.kv(), etcd.keys(), InProcessPserver.INDEX).orElseThrow();
    assertThat(record.inSync()).as("etcd's record after the alone answers: %s", record).isFalse();
    return acknowledged;
  }

  @Test
  void primaryRestartedWithinItsLease_waitsForIt_thenServesEveryAcknowledgedPushFromItsLog()
      throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = FaultyNetwork.reliable();
    FaultyNetwork backupNetwork = FaultyNetwork.reliable();
    FaultyNetwork restartedNetwork = FaultyNetwork.reliable();
    FaultyNetwork newBackupNetwork = FaultyNetwork.reliable();
    try (etcd;
        network;
        backupNetwork;
        restartedNetwork;
        newBackupNetwork;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, backupNetwork, TIMEOUT)) {
      List<PushGradientsRequest> acknowledged = answerAloneWithTheBackupGone(etcd, a, b);
      ShardCheckpoint answered = a.state();
      // kill -9 with the disk intact; restarted before etcd ends the lease, which holds ps/0
      a.crashWithinLease();
      assertThat(etcd.kv().get(etcd.keys().ps(InProcessPserver.INDEX))).isPresent();

      long restartedAt = System.nanoTime();
      try (InProcessPserver a2 = a.restartOnSameDisk("ps-a2", restartedNetwork, TIMEOUT)) {
        assertThatThrownBy(a2::registerAsRegistrationDoes)
            .as("the restarted primary, ps/0 held by its earlier lease: it waits, no backup")
            .isInstanceOf(IllegalStateException.class);
        assertThat(a2.lifecycle.role()).isEqualTo(ShardRole.UNCLAIMED);
        assertThat(etcd.kv().get(etcd.keys().psBackup(InProcessPserver.INDEX)))
            .as("the restarted primary registered as the backup of its own shard")
            .isEmpty();
        assertThat(a2.dir().resolve("wal").resolve("superseded-ps-" + InProcessPserver.INDEX))
            .as("the restarted primary's log, set aside")
            .satisfies(p -> assertThat(Files.exists(p)).isFalse());

        // etcd ends the killed process's lease (its TTL ran out): ps/0 vanishes
        a.leaseExpiresWhilePaused();
        assertThat(a2.registerAsRegistrationDoes())
            .as("the restarted primary claims the shard back with its log")
            .isTrue();
        for (PushGradientsRequest push : acknowledged) {
          assertThat(a2.shard.pushOutcome(push).duplicate())
              .as("step %d, acknowledged before the kill, again", push.getStep())
              .isTrue();
        }
        assertThat(ShardState.of(a2.state()).differences(ShardState.of(answered)))
            .as("the restarted primary's state against the killed one's")
            .isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - restartedAt))
            .isLessThan(Duration.ofSeconds(30));

        // a new backup joins: it gets a copy, and etcd records it in sync
        try (InProcessPserver c = new InProcessPserver("ps-c", etcd, newBackupNetwork, TIMEOUT)) {
          assertThat(c.registerAsRegistrationDoes()).isFalse();
          Poll.until(
              Duration.ofSeconds(10),
              Duration.ofMillis(5),
              () -> a2.replication.backupSynced() && c.lifecycle.role() == ShardRole.BACKUP_SYNCED,
              "ps-c synced with the restarted primary");
          assertThat(
                  ShardSyncRecord.read(etcd.kv(), etcd.keys(), InProcessPserver.INDEX)
                      .orElseThrow()
                      .inSync())
              .isTrue();
          assertThat(ShardState.of(c.state()).differences(ShardState.of(a2.state()))).isEmpty();
        }
      }
    }
  }

  @Test
  void backupRestartedWhileTheKilledPrimarysLeaseHolds_refusesTheTakeover_primaryClaimsItBack()
      throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = FaultyNetwork.reliable();
    FaultyNetwork backupNetwork = FaultyNetwork.reliable();
    FaultyNetwork restartedNetwork = FaultyNetwork.reliable();
    FaultyNetwork restartedBackupNetwork = FaultyNetwork.reliable();
    try (etcd;
        network;
        backupNetwork;
        restartedNetwork;
        restartedBackupNetwork;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, backupNetwork, TIMEOUT)) {
      List<PushGradientsRequest> acknowledged = answerAloneWithTheBackupGone(etcd, a, b);
      a.crashWithinLease();

      try (InProcessPserver a2 = a.restartOnSameDisk("ps-a2", restartedNetwork, TIMEOUT);
          InProcessPserver b2 = b.restartOnSameDisk("ps-b2", restartedBackupNetwork, TIMEOUT)) {
        assertThatThrownBy(a2::registerAsRegistrationDoes)
            .as("the restarted primary, ps/0 held by its earlier lease")
            .isInstanceOf(IllegalStateException.class);
        // the old backup, restarted too, takes the free backup place; the shard still waits
        assertThat(b2.registerAsRegistrationDoes()).isFalse();
        assertThatThrownBy(a2::registerAsRegistrationDoes)
            .as("the restarted primary, a backup registered meanwhile")
            .isInstanceOf(IllegalStateException.class);

        a.leaseExpiresWhilePaused();
        Poll.until(
            Duration.ofSeconds(10),
            Duration.ofMillis(5),
            () -> b2.takeoversRefused() > 0,
            "ps-b2 refused to take over a shard whose primary answered alone");
        assertThat(a2.registerAsRegistrationDoes()).isTrue();
        for (PushGradientsRequest push : acknowledged) {
          assertThat(a2.shard.pushOutcome(push).duplicate())
              .as("step %d, acknowledged before the kill, again", push.getStep())
              .isTrue();
        }
        Poll.until(
            Duration.ofSeconds(10),
            Duration.ofMillis(5),
            () -> a2.replication.backupSynced() && b2.shard.step() == a2.shard.step(),
            "ps-b2 synced with the restarted primary");
        assertThat(ShardState.of(b2.state()).differences(ShardState.of(a2.state()))).isEmpty();
        assertThat(b2.promoted()).isFalse();
      }
    }
  }
}
