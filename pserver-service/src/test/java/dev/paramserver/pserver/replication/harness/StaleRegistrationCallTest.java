package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.testsupport.Poll;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A call of a backup's earlier registration (a record or a copy the network held while the backup
 * was paused past its lease) reaches the backup after it registered again and installed the
 * primary's new copy. The primary numbers its copies per registration of the backup, so the late
 * call carries the same copy number as the new copy; it must be refused, never applied: the backup
 * would skip the next record of the new registration as already applied (a push acknowledged but
 * not held), or take its shard back to the old copy while saying it is in sync.
 */
@Timeout(60)
class StaleRegistrationCallTest {
  private static final long SEED = 11;
  private static final Duration TIMEOUT = Duration.ofSeconds(1);
  private static final Duration BOUND = Duration.ofSeconds(10);

  private static void awaitSynced(InProcessPserver primary, InProcessPserver backup) {
    Poll.until(
        BOUND,
        Duration.ofMillis(5),
        () ->
            primary.replication.backupSynced()
                && backup.lifecycle.role() == ShardRole.BACKUP_SYNCED
                && backup.shard.step() == primary.shard.step(),
        backup.name + " synced with " + primary.name);
  }

  private static List<String> differences(InProcessPserver backup, InProcessPserver primary) {
    return ShardState.of(backup.state()).differences(ShardState.of(primary.state()));
  }

  /** The backup pauses past its lease: etcd ends it and the primary sees the backup go. */
  private static void pausedPastItsLease(InProcessPserver primary, InProcessPserver backup) {
    backup.leaseExpiresWhilePaused();
    Poll.until(
        BOUND,
        Duration.ofMillis(5),
        () -> !primary.replication.backupSynced(),
        primary.name + " saw " + backup.name + " go");
  }

  @Test
  void recordOfAnEarlierRegistration_deliveredAfterTheNewCopy_isRefused() throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    ExecutorService pusher = Executors.newSingleThreadExecutor(r -> new Thread(r, "stale-push"));
    try (etcd;
        FaultyNetwork network = FaultyNetwork.reliable();
        FaultyNetwork reliable = FaultyNetwork.reliable();
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, reliable, TIMEOUT)) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      a.checkpoints.checkpointNow();
      assertThat(b.registerAsRegistrationDoes()).isFalse();
      awaitSynced(a, b);

      // the record of the next push (copy 1, record 1 of this registration) is stuck in the network
      FaultyNetwork.Captured stuck = network.holdNext("Replicate");
      CompletableFuture<Boolean> first =
          CompletableFuture.supplyAsync(
              () -> a.shard.pushOutcome(Trainers.push(SEED, 0, 1)).duplicate(), pusher);
      Poll.until(BOUND, Duration.ofMillis(5), stuck::holding, "the record in the network");
      pausedPastItsLease(a, b);
      // the primary's call fails; the request itself is still on its way
      stuck.failCaller();
      assertThat(first.get(10, TimeUnit.SECONDS)).as("the first push was a duplicate").isFalse();

      // the backup resumes, registers again and is sent a new copy (holding the first push)
      assertThat(b.resumeAfterLeaseLoss()).isFalse();
      awaitSynced(a, b);
      assertThat(differences(b, a)).isEmpty();

      // now the network delivers the earlier registration's record
      ReplicateRequest late = (ReplicateRequest) stuck.messages().get(0);
      Throwable refused = catchThrowable(() -> LateDelivery.replicate(b, late));

      // the next push's record is the new registration's first: the backup must apply it
      assertThat(a.shard.pushOutcome(Trainers.push(SEED, 0, 2)).duplicate()).isFalse();
      assertThat(differences(b, a))
          .as(
              "the backup holds every acknowledged push after a record of its earlier"
                  + " registration came late (the call was answered %s)",
              refused == null ? "as applied" : refused.toString())
          .isEmpty();
      assertThat(refused)
          .as("a record of the backup's earlier registration is refused")
          .isInstanceOf(StatusRuntimeException.class)
          .hasMessageContaining("an earlier registration of this backup");
    } finally {
      pusher.shutdownNow();
    }
  }

  @Test
  void copyOfAnEarlierRegistration_deliveredAfterTheNewCopy_isRefused() throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    try (etcd;
        FaultyNetwork network = FaultyNetwork.reliable();
        FaultyNetwork reliable = FaultyNetwork.reliable();
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, TIMEOUT);
        InProcessPserver b = new InProcessPserver("ps-b", etcd, reliable, TIMEOUT)) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      a.checkpoints.checkpointNow();

      // the first copy (copy 1, the model before any push) is stuck in the network; the primary
      // gives up on it and sends copy 2
      FaultyNetwork.Captured stuck = network.holdNext("Fill");
      assertThat(b.registerAsRegistrationDoes()).isFalse();
      Poll.until(BOUND, Duration.ofMillis(5), stuck::holding, "the first copy in the network");
      stuck.failCaller();
      awaitSynced(a, b);
      assertThat(a.shard.pushOutcome(Trainers.push(SEED, 0, 1)).duplicate()).isFalse();

      // the backup pauses past its lease, resumes, registers again and gets a new copy 1
      pausedPastItsLease(a, b);
      assertThat(b.resumeAfterLeaseLoss()).isFalse();
      awaitSynced(a, b);
      assertThat(differences(b, a)).isEmpty();

      // now the network delivers the earlier registration's copy
      @SuppressWarnings("unchecked")
      List<FillChunk> late = (List<FillChunk>) (List<?>) stuck.messages();
      Throwable refused = catchThrowable(() -> LateDelivery.fill(b, late));

      assertThat(differences(b, a))
          .as(
              "the backup holds every acknowledged push after a copy of its earlier"
                  + " registration came late (the call was answered %s)",
              refused == null ? "as installed" : refused.toString())
          .isEmpty();
      assertThat(refused)
          .as("a copy of the backup's earlier registration is refused")
          .isInstanceOf(StatusRuntimeException.class)
          .hasMessageContaining("an earlier registration of this backup");
      assertThat(b.lifecycle.role()).isEqualTo(ShardRole.BACKUP_SYNCED);
    }
  }
}
