package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * The deterministic simulation of replication and takeover (see {@link Simulation}): many seeded
 * schedules with no lost, doubled or wrong update (nor anything outside the seed leaking into a
 * run: a LEAK violation); seeds replayed bit for bit, a mismatch printing the first step where the
 * two runs part; and an injected defect (the out-of-sync record never written) found within a
 * bounded number of seeds.
 *
 * <p>System properties (docs/how-to/test.md): {@code simulation.seeds} (schedules of the first
 * test, 10000 by default), {@code simulation.firstSeed} (0), {@code simulation.duration} (an
 * ISO-8601 duration such as PT1H: runs seeds until it is up instead), {@code simulation.seed} (runs
 * that seed alone and prints its history), {@code simulation.parallel} (simulations run at once,
 * each on its own scheduler: 8 per core by default, as they mostly wait for thread hand-offs), and
 * {@code simulation.quickRestart} (true: every crashed pserver restarts without waiting for etcd to
 * expire its lease; false: every one waits; unset: drawn per crash).
 */
class ReplicationSimulationTest {
  private static final int DEFECT_SEEDS = 600;
  private static Level level;

  @BeforeAll
  static void quiet() {
    // a simulation logs what a pserver logs: thousands of lines per second of simulated faults
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    level = root.getLevel();
    root.setLevel(Level.OFF);
  }

  @AfterAll
  static void loud() {
    ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).setLevel(level);
  }

  @Test
  @Timeout(value = 900)
  void manySchedules_everyAcknowledgedPushAppliedExactlyOnce() throws InterruptedException {
    String only = System.getProperty("simulation.seed");
    if (only != null) {
      SimulationResult r = run(Long.parseLong(only), SimulationSettings.standard());
      System.out.println(r.report());
      assertThat(r.verdict().violations()).as(r.report()).isEmpty();
      return;
    }
    long first = Long.getLong("simulation.firstSeed", 0);
    long seeds = Long.getLong("simulation.seeds", 10_000);
    String duration = System.getProperty("simulation.duration");
    long until =
        duration == null ? Long.MAX_VALUE : System.nanoTime() + Duration.parse(duration).toNanos();
    int parallel =
        Integer.getInteger("simulation.parallel", 8 * Runtime.getRuntime().availableProcessors());
    long started = System.nanoTime();
    AtomicLong ran = new AtomicLong();
    AtomicLong acknowledged = new AtomicLong();
    List<String> failures = Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool = Executors.newFixedThreadPool(parallel);
    Semaphore queued = new Semaphore(2 * parallel);
    try {
      for (long seed = first;
          duration != null ? System.nanoTime() < until : seed < first + seeds;
          seed++) {
        long s = seed;
        // a short queue: a timed run ends when its time is up, a failing one soon after
        queued.acquire();
        if (failures.size() >= 3) {
          break;
        }
        pool.execute(
            () -> {
              try {
                SimulationResult r = run(s, SimulationSettings.standard());
                acknowledged.addAndGet(r.verdict().acknowledged());
                ran.incrementAndGet();
                if (!r.ok()) {
                  failures.add(r.report());
                }
              } finally {
                queued.release();
              }
            });
      }
    } finally {
      pool.shutdown();
    }
    assertThat(pool.awaitTermination(800, TimeUnit.SECONDS)).as("schedules ended").isTrue();
    double secs = (System.nanoTime() - started) / 1e9;
    System.out.printf(
        "SIMULATION %d schedules from seed %d, %d acknowledged pushes, %d violating, %.1f s,"
            + " %.0f schedules/s, %d at once%n",
        ran.get(), first, acknowledged.get(), failures.size(), secs, ran.get() / secs, parallel);
    assertThat(failures).as(String.join("\n", failures)).isEmpty();
    assertThat(acknowledged.get()).as("acknowledged pushes").isGreaterThan(ran.get());
  }

  @Test
  @Timeout(value = 120)
  void sameSeed_replaysBitForBit() {
    for (long seed : new long[] {7, 51, 4242}) {
      SimulationResult first = replay(seed);
      SimulationResult second = replay(seed);
      String parted = first.firstDifference(second).orElse("the traces are equal");
      assertThat(second.history())
          .as("seed %d's history; %s", seed, parted)
          .isEqualTo(first.history());
      assertThat(second.steps()).as("seed %d's steps; %s", seed, parted).isEqualTo(first.steps());
      assertThat(second.traceHash())
          .as("seed %d's trace hash; %s", seed, parted)
          .isEqualTo(first.traceHash());
      assertThat(first.firstDifference(second)).as("seed %d's trace", seed).isEmpty();
    }
  }

  /** A run of {@code seed} keeping its trace in words, to compare with another. */
  static SimulationResult replay(long seed) {
    try (Simulation s = new Simulation(seed, SimulationSettings.standard()).keepTrace()) {
      return s.run();
    }
  }

  @Test
  @Timeout(value = 600)
  void skippedOutOfSyncRecord_isFoundWithinAFewHundredSeeds() {
    SimulationSettings defective = SimulationSettings.standard().skippingOutOfSyncRecords();
    for (long seed = 0; seed < DEFECT_SEEDS; seed++) {
      SimulationResult r = run(seed, defective);
      if (!r.ok()) {
        System.out.println("the injected defect found by seed " + seed + ":\n" + r.report());
        assertThat(r.verdict().lost() + r.verdict().doubled()).isPositive();
        return;
      }
    }
    throw new AssertionError(
        "the simulation did not find the skipped out-of-sync record in " + DEFECT_SEEDS + " seeds");
  }

  private static SimulationResult run(long seed, SimulationSettings settings) {
    try (Simulation s = new Simulation(seed, settings)) {
      return s.run();
    }
  }
}
