package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;

/**
 * A backup that takes over serves exactly what its primary held: after a schedule (see {@link
 * ReplicationOrderPropertyTest}) the primary crashes (its lease ends, {@code ps/0} vanishes), the
 * backup claims the shard, and its values, Adam moments, sparse rows and applied-push records are
 * the primary's bit for bit. It then goes on as a primary: every trainer's retry of its last push
 * is a duplicate, a new backup joins and receives a copy while the trainers push again through the
 * same faults, and it ends bit-identical to the new primary, as does the new primary's checkpoint
 * plus log.
 */
class ReplicaTakeoverPropertyTest {

  // a jqwik property, outside JUnit Jupiter's default timeout: each try is bounded by the harness's
  // waits, the run by the tries and BOUNDED shrinking (10 s)
  @Property(shrinking = ShrinkingMode.BOUNDED)
  void takenOverBackup_servesThePrimarysState_andGoesOn(@ForAll("schedules") Schedule schedule)
      throws Exception {
    try (ReplicaPair pair = new ReplicaPair(schedule)) {
      assertThat(pair.run(schedule).failures()).as("what the trainers saw").isEmpty();
      pair.awaitSynced(pair.primary, pair.backup);
      ShardState before = ShardState.of(pair.primary.state());

      pair.primary.crash();
      InProcessPserver next = pair.backup;
      Poll.until(
          Duration.ofSeconds(20),
          Duration.ofMillis(5),
          () -> next.promoted() && serves(next.shard),
          "ps-b to take shard 0 over");
      assertThat(ShardState.of(next.state()).differences(before))
          .as("new primary vs the primary it replaced")
          .isEmpty();

      for (int t = 0; t < schedule.trainers(); t++) {
        assertThat(next.shard.pushOutcome(Trainers.push(schedule.seed(), t, schedule.pushes())))
            .as("t" + t + "'s retry of its last push on the new primary")
            .matches(PushOutcome::duplicate);
      }

      InProcessPserver third = pair.another("ps-c");
      third.registerAsBackup();
      Trainers.Outcome after = Trainers.run(next.shard, schedule, schedule.pushes() + 1, n -> {});
      assertThat(after.failures()).as("what the trainers saw after the takeover").isEmpty();
      pair.backupNetwork.heal();
      pair.awaitSynced(next, third);

      ShardState now = ShardState.of(next.state());
      assertThat(now.step()).isEqualTo(2L * schedule.trainers() * schedule.pushes());
      assertThat(ShardState.of(third.state()).differences(now))
          .as("new backup vs new primary")
          .isEmpty();
      assertThat(pair.recovered(next).differences(now))
          .as("new primary's checkpoint + write-ahead log vs new primary")
          .isEmpty();
    }
  }

  private static boolean serves(ParameterShard shard) {
    try {
      shard.pull(PullParametersRequest.getDefaultInstance());
      return true;
    } catch (ServiceException e) {
      return false;
    }
  }

  @Provide
  Arbitrary<Schedule> schedules() {
    return Schedules.any();
  }
}
