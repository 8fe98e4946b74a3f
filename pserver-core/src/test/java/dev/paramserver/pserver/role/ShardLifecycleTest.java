package dev.paramserver.pserver.role;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.Replica;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ShardLifecycleTest {
  private final ParameterShard shard = new ParameterShard(true);
  private final ShardLifecycle lifecycle = new ShardLifecycle(shard);

  private void initialise() {
    shard.init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 1, 1))));
    shard.finishInit(finish("i", 1));
  }

  private static ErrorReason reasonOfPush(ParameterShard shard) {
    try {
      shard.push(push(gradient("w", 0, 1, 1)));
      return null;
    } catch (ServiceException e) {
      return e.reason();
    }
  }

  /** A replica that records what it is sent. */
  private static final class Recording implements Replica {
    final List<WalRecord> appended = new ArrayList<>();

    @Override
    public void append(WalRecord record) {
      appended.add(record);
    }

    @Override
    public void settle() {}
  }

  @Test
  void startsUnclaimed_withCallsHeld() {
    assertThat(lifecycle.role()).isEqualTo(ShardRole.UNCLAIMED);
    assertThatThrownBy(this::initialise)
        .isInstanceOfSatisfying(
            ServiceException.class,
            e -> assertThat(e.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN));
  }

  @Test
  void claimThenServe_servesTheIndex_andAReclaimOfTheSameIndexLoadsNothing() {
    assertThat(lifecycle.claimed(3)).isTrue();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.LOADING);
    assertThat(shard.index()).isEqualTo(-1);
    lifecycle.serve();
    initialise();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.SERVING);
    assertThat(shard.index()).isEqualTo(3);
    assertThat(reasonOfPush(shard)).isNull();

    assertThat(lifecycle.claimed(3)).isFalse();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.SERVING);
    assertThat(lifecycle.claimed(4)).isTrue();
    assertThat(reasonOfPush(shard)).isEqualTo(ErrorReason.SHUTTING_DOWN);
  }

  @Test
  void illegalMove_throwsNamingTheMove_andChangesNothing() {
    assertThatThrownBy(() -> lifecycle.servePrimary(new Recording()))
        .isInstanceOfSatisfying(
            IllegalRoleMoveException.class,
            e -> {
              assertThat(e.from()).isEqualTo(ShardRole.UNCLAIMED);
              assertThat(e.to()).isEqualTo(ShardRole.PRIMARY);
              assertThat(e.getMessage()).contains("UNCLAIMED -> PRIMARY");
            });
    assertThat(lifecycle.role()).isEqualTo(ShardRole.UNCLAIMED);
    assertThat(shard.index()).isEqualTo(-1);
  }

  @Test
  void primary_handsRecordsToItsReplica_andStatusSaysPrimary() {
    lifecycle.claimed(0);
    Recording replica = new Recording();
    lifecycle.servePrimary(replica);
    initialise();
    assertThat(reasonOfPush(shard)).isNull();
    assertThat(replica.appended).hasSize(1);
    assertThat(lifecycle.status().getReplicaRole()).isEqualTo(ReplicaRole.REPLICA_PRIMARY);
  }

  @Test
  void deposedPrimary_refusesPushesUnavailable_thenBecomesBackup() {
    lifecycle.claimed(0);
    Recording replica = new Recording();
    lifecycle.servePrimary(replica);
    initialise();
    assertThat(lifecycle.deposed("pserver 0 is no longer the primary of its shard")).isTrue();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.DEPOSED);
    // SHUTTING_DOWN is UNAVAILABLE on the wire: trainers look the shard's primary up again
    assertThatThrownBy(() -> shard.push(push(gradient("w", 0, 1, 1))))
        .isInstanceOfSatisfying(
            ServiceException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN);
              assertThat(e.getMessage()).contains("no longer the primary");
            });
    assertThat(replica.appended).isEmpty();
    assertThat(lifecycle.deposed("again")).isFalse();

    lifecycle.replicationStopped();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.DEPOSED);
    lifecycle.backup(0);
    assertThat(lifecycle.role()).isEqualTo(ShardRole.BACKUP_FILLING);
    assertThat(shard.index()).isEqualTo(-1);
    assertThat(shard.initialised()).isFalse();
    assertThat(lifecycle.status().getBackupOf()).isZero();
    assertThat(lifecycle.status().getReplicaRole()).isEqualTo(ReplicaRole.REPLICA_BACKUP_FILLING);
  }

  @Test
  void backup_followsSyncedAndFilling_forItsOwnShardOnly() {
    lifecycle.backup(2);
    lifecycle.backupSynced(1, true);
    assertThat(lifecycle.role()).isEqualTo(ShardRole.BACKUP_FILLING);
    lifecycle.backupSynced(2, true);
    assertThat(lifecycle.role()).isEqualTo(ShardRole.BACKUP_SYNCED);
    assertThat(lifecycle.status().getReplicaRole()).isEqualTo(ReplicaRole.REPLICA_BACKUP_SYNCED);
    lifecycle.backupSynced(2, false);
    assertThat(lifecycle.role()).isEqualTo(ShardRole.BACKUP_FILLING);
  }

  @Test
  void takeover_claimLost_followsAgain_claimWon_servesAsPrimary() {
    lifecycle.backup(1);
    lifecycle.backupSynced(1, true);
    assertThat(lifecycle.beginTakeover(0)).isFalse();
    assertThat(lifecycle.beginTakeover(1)).isTrue();
    // a copy installed meanwhile does not move a takeover in progress
    lifecycle.backupSynced(1, false);
    assertThat(lifecycle.role()).isEqualTo(ShardRole.TAKING_OVER);
    lifecycle.takeoverAborted(true);
    assertThat(lifecycle.role()).isEqualTo(ShardRole.BACKUP_SYNCED);

    assertThat(lifecycle.beginTakeover(1)).isTrue();
    lifecycle.takeoverInstalled();
    assertThat(shard.index()).isEqualTo(1);
    lifecycle.servePrimary(new Recording());
    assertThat(lifecycle.role()).isEqualTo(ShardRole.PRIMARY);
    assertThat(lifecycle.index()).isEqualTo(1);
    assertThat(lifecycle.backupOf()).isEqualTo(-1);
  }

  @Test
  void failedTakeover_released_leavesNoIndexAndHeldCalls_andCanBeClaimedAgain() {
    lifecycle.backup(1);
    lifecycle.beginTakeover(1);
    lifecycle.takeoverInstalled();
    lifecycle.release("the takeover of shard 1 failed");
    assertThat(lifecycle.role()).isEqualTo(ShardRole.UNCLAIMED);
    assertThat(shard.index()).isEqualTo(-1);
    assertThat(lifecycle.index()).isEqualTo(-1);
    assertThatThrownBy(this::initialise).isInstanceOf(ServiceException.class);

    assertThat(lifecycle.claimed(1)).isTrue();
    lifecycle.serve();
    initialise();
    assertThat(reasonOfPush(shard)).isNull();
  }

  @Test
  void shutdownDuringTakeover_makesItsNextMoveIllegal() {
    lifecycle.backup(1);
    lifecycle.beginTakeover(1);
    lifecycle.drain();
    assertThatThrownBy(lifecycle::takeoverInstalled).isInstanceOf(IllegalRoleMoveException.class);
    assertThatThrownBy(() -> lifecycle.servePrimary(new Recording()))
        .isInstanceOf(IllegalRoleMoveException.class);
    lifecycle.release("too late");
    assertThat(lifecycle.role()).isEqualTo(ShardRole.DRAINING);
    lifecycle.stopped();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.STOPPED);
  }

  @Test
  void drain_refusesPushesShuttingDown_andIsIdempotent() {
    lifecycle.claimed(0);
    lifecycle.serve();
    initialise();
    lifecycle.drain();
    lifecycle.drain();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.DRAINING);
    assertThat(reasonOfPush(shard)).isEqualTo(ErrorReason.SHUTTING_DOWN);
  }

  @Test
  void replicationStopped_primaryRefusesPushes_backupHoldsNothing() {
    lifecycle.claimed(0);
    lifecycle.servePrimary(new Recording());
    initialise();
    lifecycle.replicationStopped();
    // before: SERVING, answering pushes on its log alone while another pserver may own the index
    assertThat(lifecycle.role()).isEqualTo(ShardRole.DEPOSED);
    assertThat(reasonOfPush(shard)).isEqualTo(ErrorReason.SHUTTING_DOWN);
    assertThat(shard.index()).as("no checkpoint of this state under index 0").isEqualTo(-1);

    lifecycle.backup(0);
    lifecycle.replicationStopped();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.UNCLAIMED);
    assertThat(lifecycle.backupOf()).isEqualTo(-1);
  }

  @Test
  void leaseLost_servingShardRefusesPushesAtOnce_andAClaimOfTheSameIndexLoadsItAgain() {
    lifecycle.claimed(0);
    lifecycle.serve();
    initialise();
    assertThat(reasonOfPush(shard)).isNull();

    assertThat(lifecycle.leaseLost("pserver 0 lost its etcd lease")).isTrue();
    assertThat(lifecycle.role()).isEqualTo(ShardRole.DEPOSED);
    assertThatThrownBy(() -> shard.push(push(gradient("w", 0, 1, 1))))
        .isInstanceOfSatisfying(
            ServiceException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN);
              assertThat(e.getMessage()).contains("lost its etcd lease");
            });
    assertThat(lifecycle.leaseLost("again")).isFalse();
    assertThat(lifecycle.claimed(0)).as("the same index is loaded again").isTrue();
  }

  @Test
  void lateReleaseOfAnEndedTakeover_doesNotUndoTheRegistrationsNewClaim() {
    lifecycle.backup(1);
    lifecycle.beginTakeover(1);
    lifecycle.replicationStopped(); // lease lost: the takeover ends, the registration claims again
    assertThat(lifecycle.claimed(2)).isTrue();
    lifecycle.release("the takeover of shard 1 failed");
    assertThat(lifecycle.role()).isEqualTo(ShardRole.LOADING);
    lifecycle.serve();
    assertThat(shard.index()).isEqualTo(2);
  }
}
