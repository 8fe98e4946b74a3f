package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A backup paused past its lease comes back (issue 42; the soak's "shard has no primary with a
 * synced backup" after a paused backup): etcd ends its lease, the primary answers a push with no
 * backup registered, the backup resumes, registers again and is sent a copy that etcd records in
 * sync, and only then does that push, answered alone, record the backup out of sync. The backup
 * holds the push (its copy was cut after it) and is in sync, so no new copy is due: the primary
 * must record it in sync again by itself, with no push flowing, or the shard would stay without a
 * backup allowed to take it over.
 */
@Timeout(60)
class BackupLeaseLostResyncTest {
  private static final long SEED = 7;
  private static final Duration TIMEOUT = Duration.ofSeconds(1);
  private static final Duration BOUND = Duration.ofSeconds(10);

  private static boolean recordedInSync(InMemoryCoordinator etcd) {
    return ShardSyncRecord.read(etcd.kv(), etcd.keys(), InProcessPserver.INDEX)
        .map(ShardSyncRecord::inSync)
        .orElse(false);
  }

  @Test
  void pushAnsweredAloneAfterTheReregisteredBackupIsInSync_backupIsRecordedInSyncAgain_idle()
      throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    ExecutorService pusher =
        Executors.newSingleThreadExecutor(r -> new Thread(r, "straddling-push"));
    try (etcd;
        FaultyNetwork network = FaultyNetwork.reliable();
        FaultyNetwork reliable = FaultyNetwork.reliable();
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, reliable, TIMEOUT)) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      a.checkpoints.checkpointNow();
      assertThat(b.registerAsRegistrationDoes()).isFalse();
      Poll.until(
          BOUND,
          Duration.ofMillis(5),
          () -> a.replication.backupSynced() && recordedInSync(etcd),
          "ps-b synced and recorded in sync");
      assertThat(a.shard.pushOutcome(Trainers.push(SEED, 0, 1)).duplicate()).isFalse();

      // the backup is paused past its lease: etcd ends it, ps_backup/0 vanishes
      b.leaseExpiresWhilePaused();
      Poll.until(
          BOUND, Duration.ofMillis(5), () -> !a.replication.backupSynced(), "ps-a saw ps-b go");
      // a push with no backup registered: its answer waits for etcd's confirmation of ownership
      InMemoryCoordinator.ReadHold slowConfirm =
          etcd.holdNextRead(etcd.keys().ps(InProcessPserver.INDEX), "straddling-push");
      PushGradientsRequest straddling = Trainers.push(SEED, 0, 2);
      CompletableFuture<Boolean> answered =
          CompletableFuture.supplyAsync(() -> a.shard.pushOutcome(straddling).duplicate(), pusher);
      Poll.until(BOUND, Duration.ofMillis(5), slowConfirm::holding, "the push confirming");

      // the backup resumes, registers again, gets a copy (holding the push) and is recorded
      assertThat(b.resumeAfterLeaseLoss()).isFalse();
      Poll.until(
          BOUND,
          Duration.ofMillis(5),
          () ->
              a.replication.backupSynced()
                  && b.lifecycle.role() == ShardRole.BACKUP_SYNCED
                  && recordedInSync(etcd),
          "ps-b synced again and recorded in sync");

      // the push is answered alone now: etcd records the backup out of sync first
      slowConfirm.release();
      assertThat(answered.get(10, TimeUnit.SECONDS)).as("the push was a duplicate").isFalse();
      assertThat(a.unreplicated()).isZero(); // answered alone, but not late

      // no push flows from now on: the primary alone must bring the record back
      Poll.until(
          BOUND,
          Duration.ofMillis(5),
          () ->
              recordedInSync(etcd)
                  && a.replication.backupSynced()
                  && b.lifecycle.role() == ShardRole.BACKUP_SYNCED,
          "etcd records ps-b in sync again within " + BOUND + " with no push flowing");
      ShardSyncRecord record =
          ShardSyncRecord.read(etcd.kv(), etcd.keys(), InProcessPserver.INDEX).orElseThrow();
      assertThat(record.backup()).isEqualTo(b.name);
      // and the backup does hold every acknowledged push: what it would take the shard over with
      assertThat(ShardState.of(b.state()).differences(ShardState.of(a.state()))).isEmpty();
      assertThat(b.shard.step()).isEqualTo(2);
    } finally {
      pusher.shutdownNow();
    }
  }
}
