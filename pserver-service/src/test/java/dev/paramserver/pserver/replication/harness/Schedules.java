package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.harness.FaultyNetwork.Fault;
import dev.paramserver.pserver.replication.harness.FaultyNetwork.Kind;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;

/** The schedules the harness's properties draw from. */
final class Schedules {
  private Schedules() {}

  /** Any schedule: 2-4 trainers, 3-10 pushes each, 4 to 40 Replicate and 3 Fill faults. */
  static Arbitrary<Schedule> any() {
    Arbitrary<Integer> trainers = Arbitraries.integers().between(2, 4);
    Arbitrary<Integer> pushes = Arbitraries.integers().between(3, 10);
    Arbitrary<Integer> joins =
        Arbitraries.frequencyOf(
            Tuple.of(1, Arbitraries.just(-1)), Tuple.of(3, Arbitraries.integers().between(0, 6)));
    Arbitrary<Integer> retryEvery = Arbitraries.integers().between(0, 4);
    Arbitrary<List<Fault>> replicate = faults().list().ofMinSize(4).ofMaxSize(40);
    Arbitrary<List<Fault>> fill = faults().list().ofMaxSize(3);
    Arbitrary<Integer> holdBatch = Arbitraries.integers().between(2, 4);
    Arbitrary<Long> seed = Arbitraries.longs();
    return Combinators.combine(
            trainers, pushes, joins, retryEvery, replicate, fill, holdBatch, seed)
        .as(Schedule::new);
  }

  /** Mostly reordering (holds, delays), some failures; a quarter of the calls pass untouched. */
  static Arbitrary<Fault> faults() {
    return Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.just(Fault.PASS)),
        Tuple.of(3, Arbitraries.integers().between(1, 15).map(ms -> new Fault(Kind.DELAY, ms))),
        Tuple.of(5, Arbitraries.integers().between(5, 30).map(ms -> new Fault(Kind.HOLD, ms))),
        Tuple.of(1, Arbitraries.just(new Fault(Kind.DROP, 0))),
        Tuple.of(1, Arbitraries.just(new Fault(Kind.LOSE_REPLY, 0))));
  }
}
