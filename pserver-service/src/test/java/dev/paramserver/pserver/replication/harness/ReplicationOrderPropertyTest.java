package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.pserver.replication.harness.FaultyNetwork.Kind;
import java.util.List;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.statistics.Statistics;

/**
 * Replication keeps a backup bit-identical to its primary whatever the network does to the calls
 * between them: 2 to 4 trainers push dense and sparse Adam gradients concurrently (Adam's result
 * depends on the order of the updates), the backup registers before or during the run, and the
 * primary's Replicate and Fill calls are delayed, held and released out of order, dropped or
 * delivered with their reply lost (each such failure makes the primary send a new copy). Once the
 * primary is quiescent and the backup synced, both hold the same values, Adam moments, update
 * counts, sparse rows and applied-push records, and so does the primary's checkpoint plus its
 * write-ahead log.
 *
 * <p>Tries: {@code jqwik.tries.default} (src/test/resources/junit-platform.properties; raise it
 * with {@code -Djqwik.tries.default=500} for a long run).
 */
class ReplicationOrderPropertyTest {

  // a jqwik property, outside JUnit Jupiter's default timeout: each try is bounded by the harness's
  // waits (trainers 30 s, sync 20 s), the run by the tries and BOUNDED shrinking (10 s)
  @Property(shrinking = ShrinkingMode.BOUNDED)
  void backupIsBitIdenticalToPrimary_afterAnySchedule(@ForAll("schedules") Schedule schedule)
      throws Exception {
    try (ReplicaPair pair = check(schedule)) {
      // the harness must really reorder calls, or the property proves nothing about order
      Statistics.label("calls reordered").collect(pair.network.reordered() > 0);
      Statistics.label("calls reordered").coverage(c -> c.check(true).count(n -> n > 0));
      Statistics.label("trainers").collect(schedule.trainers());
      Statistics.label("backup joins")
          .collect(schedule.backupJoinsAfter() < 0 ? "before init" : "during");
      for (Kind k : List.of(Kind.HOLD, Kind.DROP, Kind.LOSE_REPLY)) {
        Statistics.label("calls " + k).collect(pair.network.met(k) > 0);
      }
    }
  }

  /**
   * Runs {@code schedule} and checks the backup and the primary's checkpoint plus log against the
   * primary, bit for bit.
   *
   * @return the pair, to close (the caller may read its network's statistics first)
   */
  static ReplicaPair check(Schedule schedule) throws Exception {
    ReplicaPair pair = new ReplicaPair(schedule);
    try {
      Trainers.Outcome outcome = pair.run(schedule);
      assertThat(outcome.failures()).as("what the trainers saw").isEmpty();
      pair.awaitSynced(pair.primary, pair.backup);

      ShardState primary = ShardState.of(pair.primary.state());
      ShardState backup = ShardState.of(pair.backup.state());
      assertThat(primary.step())
          .as("updates applied")
          .isEqualTo((long) schedule.trainers() * schedule.pushes());
      assertThat(backup.differences(primary)).as("backup vs primary").isEmpty();
      assertThat(pair.recovered(pair.primary).differences(primary))
          .as("primary's checkpoint + write-ahead log vs primary")
          .isEmpty();
      assertThat(pair.primary.unreplicated())
          .as("pushes the primary answered without its backup (after the replication timeout)")
          .isZero();
      return pair;
    } catch (Exception | AssertionError e) {
      pair.close();
      throw e;
    }
  }

  @Provide
  Arbitrary<Schedule> schedules() {
    return Schedules.any();
  }
}
