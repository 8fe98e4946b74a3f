package dev.paramserver.pserver.role;

import static dev.paramserver.pserver.role.ShardRole.BACKUP_FILLING;
import static dev.paramserver.pserver.role.ShardRole.BACKUP_SYNCED;
import static dev.paramserver.pserver.role.ShardRole.DEPOSED;
import static dev.paramserver.pserver.role.ShardRole.DRAINING;
import static dev.paramserver.pserver.role.ShardRole.LOADING;
import static dev.paramserver.pserver.role.ShardRole.PRIMARY;
import static dev.paramserver.pserver.role.ShardRole.SERVING;
import static dev.paramserver.pserver.role.ShardRole.STOPPED;
import static dev.paramserver.pserver.role.ShardRole.TAKING_OVER;
import static dev.paramserver.pserver.role.ShardRole.UNCLAIMED;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ShardRoleTest {

  /** The whole table, written out once more: a change to the state machine must change this. */
  private static final Map<ShardRole, Set<ShardRole>> ALLOWED = new EnumMap<>(ShardRole.class);

  static {
    ALLOWED.put(UNCLAIMED, EnumSet.of(LOADING, BACKUP_FILLING, DRAINING));
    ALLOWED.put(LOADING, EnumSet.of(SERVING, PRIMARY, UNCLAIMED, DRAINING));
    ALLOWED.put(SERVING, EnumSet.of(LOADING, PRIMARY, BACKUP_FILLING, DEPOSED, DRAINING));
    ALLOWED.put(PRIMARY, EnumSet.of(DEPOSED, DRAINING));
    ALLOWED.put(BACKUP_FILLING, EnumSet.of(BACKUP_SYNCED, TAKING_OVER, UNCLAIMED, DRAINING));
    ALLOWED.put(BACKUP_SYNCED, EnumSet.of(BACKUP_FILLING, TAKING_OVER, UNCLAIMED, DRAINING));
    ALLOWED.put(
        TAKING_OVER, EnumSet.of(PRIMARY, BACKUP_FILLING, BACKUP_SYNCED, UNCLAIMED, DRAINING));
    ALLOWED.put(DEPOSED, EnumSet.of(LOADING, BACKUP_FILLING, UNCLAIMED, DRAINING));
    ALLOWED.put(DRAINING, EnumSet.of(STOPPED));
    ALLOWED.put(STOPPED, EnumSet.noneOf(ShardRole.class));
  }

  @Test
  void canMoveTo_allowsExactlyTheMovesOfTheTable() {
    for (ShardRole from : ShardRole.values()) {
      for (ShardRole to : ShardRole.values()) {
        assertThat(from.canMoveTo(to))
            .as("%s -> %s", from, to)
            .isEqualTo(ALLOWED.get(from).contains(to));
      }
    }
  }

  @Test
  void everyStateButStopped_canDrain_andStoppedIsFinal() {
    for (ShardRole s : ShardRole.values()) {
      if (s != DRAINING && s != STOPPED) {
        assertThat(s.canMoveTo(DRAINING)).as("%s -> DRAINING", s).isTrue();
      }
    }
    assertThat(EnumSet.allOf(ShardRole.class)).noneMatch(STOPPED::canMoveTo);
  }

  @Test
  void onlyAPrimaryOrABackupTakingOver_becomesPrimary_neverABackupDirectly() {
    assertThat(BACKUP_FILLING.canMoveTo(PRIMARY)).isFalse();
    assertThat(BACKUP_SYNCED.canMoveTo(PRIMARY)).isFalse();
    assertThat(TAKING_OVER.canMoveTo(PRIMARY)).isTrue();
    assertThat(DEPOSED.canMoveTo(PRIMARY)).isFalse();
    assertThat(TAKING_OVER.canMoveTo(SERVING)).isFalse();
  }

  @Test
  void serves_onlySERVINGandPRIMARY() {
    assertThat(EnumSet.allOf(ShardRole.class).stream().filter(ShardRole::serves))
        .containsExactlyInAnyOrder(SERVING, PRIMARY);
  }
}
