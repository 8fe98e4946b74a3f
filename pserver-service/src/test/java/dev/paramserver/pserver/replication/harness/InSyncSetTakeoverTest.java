package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.ForcedTakeover;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.testsupport.Poll;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The in-sync set kept in etcd (issue 42, defect (a)): the backup of a primary that answered pushes
 * alone (its link to the backup black-holed past the replication timeout) must not take the shard
 * over when that primary is killed with its disk intact; the shard waits for the primary's log, and
 * the restarted primary serves it again with every acknowledged push. An operator may force the
 * takeover; then the restarted primary keeps its log aside instead of deleting it.
 */
@Timeout(60)
class InSyncSetTakeoverTest {
  private static final long SEED = 42;
  private static final Duration TIMEOUT = Duration.ofSeconds(1);
  private static final int REPLICATED = 3;
  private static final int ALONE = 3;

  /**
   * The scenario up to the kill: returns the pushes acknowledged, the last ALONE answered alone.
   */
  private static List<PushGradientsRequest> answerAloneThenCrash(
      InMemoryCoordinator etcd, FaultyNetwork network, InProcessPserver a, InProcessPserver b) {
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
        network.cut(); // P->B black-holed past the replication timeout
      }
      PushGradientsRequest push = Trainers.push(SEED, 0, step);
      assertThat(a.shard.pushOutcome(push).duplicate()).isFalse();
      acknowledged.add(push);
    }
    assertThat(a.unreplicated()).as("pushes answered without the backup").isEqualTo(ALONE);
    ShardSyncRecord record =
        ShardSyncRecord.read(etcd.kv(), etcd.keys(), InProcessPserver.INDEX).orElseThrow();
    assertThat(record.inSync()).as("etcd's record after the alone answers: %s", record).isFalse();
    // kill -9 with the disk intact: the lease ends, ps/0 vanishes
    a.crash();
    Poll.until(
        Duration.ofSeconds(10),
        Duration.ofMillis(5),
        () -> b.promoted() || b.takeoversRefused() > 0,
        "ps-b decided whether to take the shard over");
    return acknowledged;
  }

  @Test
  void backupOutOfSync_waitsForTheKilledPrimarysLog_whichServesEveryAcknowledgedPush()
      throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = FaultyNetwork.reliable();
    FaultyNetwork reliable = FaultyNetwork.reliable();
    FaultyNetwork restartedNetwork = FaultyNetwork.reliable();
    try (etcd;
        network;
        reliable;
        restartedNetwork;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, reliable, TIMEOUT)) {
      List<PushGradientsRequest> acknowledged = answerAloneThenCrash(etcd, network, a, b);
      assertThat(b.promoted()).as("the out-of-sync backup took the shard over").isFalse();

      long restartedAt = System.nanoTime();
      try (InProcessPserver a2 = a.restartOnSameDisk("ps-a2", restartedNetwork, TIMEOUT)) {
        assertThat(a2.registerAsRegistrationDoes())
            .as("the restarted primary claims the shard back with its log")
            .isTrue();
        // every acknowledged push is on the shard: answered as a duplicate
        for (PushGradientsRequest push : acknowledged) {
          assertThat(a2.shard.pushOutcome(push).duplicate())
              .as("step %d, acknowledged before the kill, again", push.getStep())
              .isTrue();
        }
        assertThat(a2.shard.step()).isEqualTo(REPLICATED + ALONE);
        assertThat(Duration.ofNanos(System.nanoTime() - restartedAt))
            .isLessThan(Duration.ofSeconds(30));
        // the backup follows the new epoch, gets a copy, and etcd records it in sync again
        Poll.until(
            Duration.ofSeconds(10),
            Duration.ofMillis(5),
            () ->
                a2.replication.backupSynced()
                    && b.lifecycle.role() == ShardRole.BACKUP_SYNCED
                    && b.shard.step() == a2.shard.step(),
            "ps-b synced with the restarted primary");
        ShardSyncRecord record =
            ShardSyncRecord.read(etcd.kv(), etcd.keys(), InProcessPserver.INDEX).orElseThrow();
        assertThat(record.inSync()).isTrue();
        assertThat(ShardState.of(b.state()).differences(ShardState.of(a2.state()))).isEmpty();
        assertThat(b.promoted()).isFalse();
      }
    }
  }

  @Test
  void backupPausedPastItsLease_doesNotClaimTheShardFromTheCheckpoint_whenItResumes()
      throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = FaultyNetwork.reliable();
    FaultyNetwork reliable = FaultyNetwork.reliable();
    FaultyNetwork restartedNetwork = FaultyNetwork.reliable();
    try (etcd;
        network;
        reliable;
        restartedNetwork;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, reliable, TIMEOUT)) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      a.checkpoints.checkpointNow();
      b.registerAsRegistrationDoes();
      Poll.until(
          Duration.ofSeconds(10),
          Duration.ofMillis(5),
          () -> a.replication.backupSynced() && b.lifecycle.role() == ShardRole.BACKUP_SYNCED,
          "ps-b synced");
      List<PushGradientsRequest> acknowledged = new ArrayList<>();
      for (int step = 1; step <= REPLICATED + ALONE; step++) {
        if (step == REPLICATED + 1) {
          // the backup is paused past its lease: etcd ends it, ps_backup/0 vanishes
          b.leaseExpiresWhilePaused();
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
      a.crash();
      // the backup resumes: its lease is lost, it registers again; the shard has neither a
      // primary nor a backup, but its last primary answered alone: it is not claimed
      assertThat(b.registerAsRegistrationDoes())
          .as("the resumed backup claimed the shard from its checkpoint")
          .isFalse();
      assertThat(b.promoted()).isFalse();

      try (InProcessPserver a2 = a.restartOnSameDisk("ps-a2", restartedNetwork, TIMEOUT)) {
        assertThat(a2.registerAsRegistrationDoes()).isTrue();
        for (PushGradientsRequest push : acknowledged) {
          assertThat(a2.shard.pushOutcome(push).duplicate())
              .as("step %d, acknowledged before the kill, again", push.getStep())
              .isTrue();
        }
        Poll.until(
            Duration.ofSeconds(10),
            Duration.ofMillis(5),
            () -> a2.replication.backupSynced() && b.shard.step() == a2.shard.step(),
            "ps-b synced with the restarted primary");
      }
    }
  }

  @Test
  void forcedTakeover_servesTheBackupsState_andTheRestartedPrimaryKeepsItsLogAside()
      throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = FaultyNetwork.reliable();
    FaultyNetwork reliable = FaultyNetwork.reliable();
    FaultyNetwork restartedNetwork = FaultyNetwork.reliable();
    try (etcd;
        network;
        reliable;
        restartedNetwork;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, reliable, TIMEOUT)) {
      List<PushGradientsRequest> acknowledged = answerAloneThenCrash(etcd, network, a, b);
      assertThat(b.promoted()).isFalse();

      ForcedTakeover.Plan plan =
          ForcedTakeover.plan(etcd.kv(), etcd.keys(), InProcessPserver.INDEX);
      assertThat(plan.risk()).contains("LOSES every push");
      String audit =
          ForcedTakeover.force(
              etcd.kv(), etcd.keys(), plan, "operator@test", System.currentTimeMillis());
      assertThat(etcd.kv().get(audit)).isPresent();
      Poll.until(Duration.ofSeconds(10), Duration.ofMillis(5), b::promoted, "ps-b took over");
      // what it serves: the replicated pushes, not those answered alone (the operator's loss)
      assertThat(b.shard.step()).isEqualTo(REPLICATED);

      try (InProcessPserver a2 = a.restartOnSameDisk("ps-a2", restartedNetwork, TIMEOUT)) {
        assertThat(a2.registerAsRegistrationDoes())
            .as("the restarted primary: ps/0 is held, it becomes the backup")
            .isFalse();
        Path aside = a2.dir().resolve("wal").resolve("superseded-ps-" + InProcessPserver.INDEX);
        try (Stream<Path> kept = Files.list(aside)) {
          assertThat(kept.map(p -> p.getFileName().toString()))
              .as("the old primary's log, kept for the operator")
              .anyMatch(n -> n.endsWith(".log"));
        }
      }
      assertThat(acknowledged).hasSize(REPLICATED + ALONE);
    }
  }
}
