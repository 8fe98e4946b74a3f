package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The deterministic simulation of replication and takeover (see {@link Simulation}): many seeded
 * schedules with no lost, doubled or wrong update; one seed replayed bit for bit; and an injected
 * defect (the out-of-sync record never written) found within a bounded number of seeds.
 *
 * <p>Properties: {@code simulation.seeds} (schedules of the first test, 10000 by default), {@code
 * simulation.firstSeed} (0), {@code simulation.duration} (an ISO-8601 duration such as PT1H: runs
 * seeds until it is up instead), {@code simulation.seed} (runs only that seed and prints its
 * history).
 */
class ReplicationSimulationTest {
  private static final int DEFECT_SEEDS = 400;

  @Test
  @Timeout(value = 900)
  void manySchedules_everyAcknowledgedPushAppliedExactlyOnce() {
    String only = System.getProperty("simulation.seed");
    if (only != null) {
      Simulation.Result r = run(Long.parseLong(only), Simulation.Settings.standard());
      System.out.println(r.report());
      assertThat(r.verdict().violations()).as(r.report()).isEmpty();
      return;
    }
    long first = Long.getLong("simulation.firstSeed", 0);
    long seeds = Long.getLong("simulation.seeds", 10_000);
    String duration = System.getProperty("simulation.duration");
    long until =
        duration == null ? Long.MAX_VALUE : System.nanoTime() + Duration.parse(duration).toNanos();
    long started = System.nanoTime();
    long ran = 0;
    long acknowledged = 0;
    List<String> failures = new ArrayList<>();
    for (long seed = first;
        duration != null ? System.nanoTime() < until : seed < first + seeds;
        seed++) {
      Simulation.Result r = run(seed, Simulation.Settings.standard());
      ran++;
      acknowledged += r.verdict().acknowledged();
      if (!r.ok()) {
        failures.add(r.report());
        if (failures.size() >= 3) {
          break;
        }
      }
    }
    double secs = (System.nanoTime() - started) / 1e9;
    System.out.printf(
        "SIMULATION %d schedules (seeds %d..%d), %d acknowledged pushes, %d violating, %.1f s,"
            + " %.0f schedules/s%n",
        ran, first, first + ran - 1, acknowledged, failures.size(), secs, ran / secs);
    assertThat(failures).as(String.join("\n", failures)).isEmpty();
    assertThat(acknowledged).as("acknowledged pushes").isGreaterThan(ran);
  }

  @Test
  @Timeout(value = 60)
  void sameSeed_replaysBitForBit() {
    for (long seed : new long[] {7, 4242}) {
      Simulation.Result first = run(seed, Simulation.Settings.standard());
      Simulation.Result second = run(seed, Simulation.Settings.standard());
      assertThat(second.history()).as("seed %d's history", seed).isEqualTo(first.history());
      assertThat(second.steps()).isEqualTo(first.steps());
      assertThat(second.traceHash()).as("seed %d's trace hash", seed).isEqualTo(first.traceHash());
    }
  }

  @Test
  @Timeout(value = 300)
  void skippedOutOfSyncRecord_isFoundWithinAFewHundredSeeds() {
    Simulation.Settings defective = Simulation.Settings.standard().skippingOutOfSyncRecords();
    for (long seed = 0; seed < DEFECT_SEEDS; seed++) {
      Simulation.Result r = run(seed, defective);
      if (!r.ok()) {
        System.out.println("the injected defect found by seed " + seed + ":\n" + r.report());
        assertThat(r.verdict().lost() + r.verdict().doubled()).isPositive();
        return;
      }
    }
    throw new AssertionError(
        "the simulation did not find the skipped out-of-sync record in " + DEFECT_SEEDS + " seeds");
  }

  private static Simulation.Result run(long seed, Simulation.Settings settings) {
    try (Simulation s = new Simulation(seed, settings)) {
      return s.run();
    }
  }
}
