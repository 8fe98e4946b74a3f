package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.pserver.replication.harness.FaultyNetwork.Fault;
import dev.paramserver.pserver.replication.harness.FaultyNetwork.Kind;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
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
    try (ReplicaPair pair = new ReplicaPair(schedule)) {
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

      Statistics.label("trainers").collect(schedule.trainers());
      Statistics.label("backup joins")
          .collect(schedule.backupJoinsAfter() < 0 ? "before init" : "during");
      for (Kind k : List.of(Kind.HOLD, Kind.DROP, Kind.LOSE_REPLY)) {
        Statistics.label("calls " + k).collect(pair.network.met(k) > 0);
      }
    }
  }

  @Provide
  Arbitrary<Schedule> schedules() {
    Arbitrary<Integer> trainers = Arbitraries.integers().between(2, 4);
    Arbitrary<Integer> pushes = Arbitraries.integers().between(3, 10);
    Arbitrary<Integer> joins =
        Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(1, Arbitraries.just(-1)),
            net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(0, 12)));
    Arbitrary<Integer> retryEvery = Arbitraries.integers().between(0, 4);
    Arbitrary<List<Fault>> replicate = faults().list().ofMaxSize(40);
    Arbitrary<List<Fault>> fill = faults().list().ofMaxSize(3);
    Arbitrary<Integer> holdBatch = Arbitraries.integers().between(2, 4);
    Arbitrary<Long> seed = Arbitraries.longs();
    return Combinators.combine(
            trainers, pushes, joins, retryEvery, replicate, fill, holdBatch, seed)
        .as(Schedule::new);
  }

  /** Mostly reordering (holds, delays), some failures; a third of the calls pass untouched. */
  static Arbitrary<Fault> faults() {
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(4, Arbitraries.just(Fault.PASS)),
        net.jqwik.api.Tuple.of(
            3, Arbitraries.integers().between(1, 15).map(ms -> new Fault(Kind.DELAY, ms))),
        net.jqwik.api.Tuple.of(
            4, Arbitraries.integers().between(5, 30).map(ms -> new Fault(Kind.HOLD, ms))),
        net.jqwik.api.Tuple.of(1, Arbitraries.just(new Fault(Kind.DROP, 0))),
        net.jqwik.api.Tuple.of(1, Arbitraries.just(new Fault(Kind.LOSE_REPLY, 0))));
  }
}
