package dev.paramserver.pserver.replication;

import static dev.paramserver.pserver.replication.BackupPhase.CLOSED;
import static dev.paramserver.pserver.replication.BackupPhase.FILLING;
import static dev.paramserver.pserver.replication.BackupPhase.SYNCED;
import static dev.paramserver.pserver.replication.BackupPhase.TAKING_OVER_FILLING;
import static dev.paramserver.pserver.replication.BackupPhase.TAKING_OVER_SYNCED;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class BackupPhaseTest {

  /** The whole table, written out once more: a change to the phases must change this. */
  private static final Map<BackupPhase, Set<BackupPhase>> ALLOWED =
      new EnumMap<>(BackupPhase.class);

  static {
    ALLOWED.put(FILLING, EnumSet.of(SYNCED, TAKING_OVER_FILLING, CLOSED));
    ALLOWED.put(SYNCED, EnumSet.of(FILLING, TAKING_OVER_SYNCED, CLOSED));
    ALLOWED.put(TAKING_OVER_FILLING, EnumSet.of(TAKING_OVER_SYNCED, FILLING, CLOSED));
    ALLOWED.put(TAKING_OVER_SYNCED, EnumSet.of(TAKING_OVER_FILLING, SYNCED, CLOSED));
    ALLOWED.put(CLOSED, EnumSet.noneOf(BackupPhase.class));
  }

  @Test
  void canMoveTo_allowsExactlyTheMovesOfTheTable() {
    for (BackupPhase from : BackupPhase.values()) {
      for (BackupPhase to : BackupPhase.values()) {
        assertThat(from.canMoveTo(to))
            .as("%s -> %s", from, to)
            .isEqualTo(ALLOWED.get(from).contains(to));
      }
    }
  }

  @Test
  void withSyncedAndWithTakeover_onlyMoveAlongTheTable_andClosedIsFinal() {
    for (BackupPhase p : BackupPhase.values()) {
      for (boolean value : new boolean[] {false, true}) {
        for (BackupPhase next : new BackupPhase[] {p.withSynced(value), p.withTakeover(value)}) {
          assertThat(next == p || p.canMoveTo(next)).as("%s -> %s", p, next).isTrue();
        }
      }
    }
    assertThat(CLOSED.withSynced(true)).isEqualTo(CLOSED);
    assertThat(CLOSED.withTakeover(true)).isEqualTo(CLOSED);
    assertThat(EnumSet.allOf(BackupPhase.class)).noneMatch(CLOSED::canMoveTo);
  }

  @Test
  void synced_isHeldByThePhaseAlone_andSurvivesATakeoverAndItsAbort() {
    assertThat(EnumSet.allOf(BackupPhase.class).stream().filter(BackupPhase::synced))
        .containsExactlyInAnyOrder(SYNCED, TAKING_OVER_SYNCED);
    assertThat(SYNCED.withTakeover(true)).isEqualTo(TAKING_OVER_SYNCED);
    assertThat(TAKING_OVER_SYNCED.withTakeover(false)).isEqualTo(SYNCED);
    assertThat(FILLING.withTakeover(true).withSynced(true).withTakeover(false)).isEqualTo(SYNCED);
    assertThat(CLOSED.synced()).isFalse();
  }

  @Test
  void work_isOneCopyOrOneRecordAtATime() {
    assertThat(BackupWork.IDLE.canMoveTo(BackupWork.INSTALLING)).isTrue();
    assertThat(BackupWork.IDLE.canMoveTo(BackupWork.APPLYING)).isTrue();
    assertThat(BackupWork.IDLE.canMoveTo(BackupWork.IDLE)).isFalse();
    assertThat(BackupWork.INSTALLING.canMoveTo(BackupWork.APPLYING)).isFalse();
    assertThat(BackupWork.APPLYING.canMoveTo(BackupWork.INSTALLING)).isFalse();
    assertThat(BackupWork.INSTALLING.canMoveTo(BackupWork.IDLE)).isTrue();
    assertThat(BackupWork.APPLYING.canMoveTo(BackupWork.IDLE)).isTrue();
  }
}
