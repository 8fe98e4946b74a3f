package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
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
 * The deterministic simulation of slot moves (see {@link MoveSimulation}): a grow from two pservers
 * to three and a shrink back to two under pushes, with no fault and then under seeded faults, every
 * acknowledged push applied exactly once across the owners, the scaling committed and balanced, no
 * slot held by two pservers, nothing outside the seed leaking into a run; and seeds replayed bit
 * for bit.
 *
 * <p>System properties (docs/how-to/test.md): {@code movesimulation.seeds} (schedules of the faulty
 * test, {@value #SEEDS} by default, about 40 s on two busy cores), {@code movesimulation.firstSeed}
 * (0), {@code movesimulation.seed} (runs that seed alone and prints its history), {@code
 * movesimulation.parallel} (simulations at once, 4 per core by default).
 */
class MoveSimulationTest {
  private static final int SEEDS = 500;
  private static Level level;

  @BeforeAll
  static void quiet() {
    // a simulation logs what a pserver logs: every move, rollback and refusal
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    level = root.getLevel();
    root.setLevel(Level.OFF);
  }

  @AfterAll
  static void loud() {
    ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).setLevel(level);
  }

  @Test
  @Timeout(value = 120)
  void growAndShrinkWithoutFaults_commitEveryMove_andApplyEveryPushOnce() {
    for (long seed = 0; seed < 3; seed++) {
      MoveResult r = run(seed, MoveSettings.quiet());
      assertThat(r.verdict().violations()).as(r.report()).isEmpty();
      assertThat(r.history())
          .as(r.report())
          .noneMatch(e -> e.outcome() == MoveHistory.Outcome.GAVE_UP);
      assertThat(r.verdict().acknowledged()).as(r.report()).isGreaterThanOrEqualTo(40);
      assertThat(r.moves()).as(r.report()).noneMatch(m -> m.contains("rolls back"));
      assertThat(r.history())
          .as("pushes refused with MOVED during the scaling; " + r.report())
          .anyMatch(e -> e.outcome() == MoveHistory.Outcome.MOVED);
    }
  }

  @Test
  @Timeout(value = 900)
  void manySchedules_everyAcknowledgedPushAppliedExactlyOnce() throws InterruptedException {
    String only = System.getProperty("movesimulation.seed");
    if (only != null) {
      MoveResult r = run(Long.parseLong(only), MoveSettings.standard());
      System.out.println(r.report());
      assertThat(r.verdict().violations()).as(r.report()).isEmpty();
      return;
    }
    long first = Long.getLong("movesimulation.firstSeed", 0);
    long seeds = Long.getLong("movesimulation.seeds", SEEDS);
    int parallel =
        Integer.getInteger(
            "movesimulation.parallel", 4 * Runtime.getRuntime().availableProcessors());
    long started = System.nanoTime();
    AtomicLong ran = new AtomicLong();
    AtomicLong acknowledged = new AtomicLong();
    AtomicLong rolledBack = new AtomicLong();
    AtomicLong forwarded = new AtomicLong();
    List<String> failures = Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool = Executors.newFixedThreadPool(parallel);
    Semaphore queued = new Semaphore(2 * parallel);
    try {
      for (long seed = first; seed < first + seeds && failures.size() < 3; seed++) {
        long s = seed;
        queued.acquire();
        pool.execute(
            () -> {
              try {
                MoveResult r = run(s, MoveSettings.standard());
                acknowledged.addAndGet(r.verdict().acknowledged());
                rolledBack.addAndGet(r.counts().rolledBack());
                forwarded.addAndGet(r.counts().forwarded());
                ran.incrementAndGet();
                if (!r.ok()) {
                  failures.add(r.report());
                }
              } catch (RuntimeException | Error e) {
                java.io.StringWriter w = new java.io.StringWriter();
                e.printStackTrace(new java.io.PrintWriter(w));
                failures.add("move simulation seed " + s + " threw: " + w);
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
        "MOVE SIMULATION %d schedules from seed %d, %d acknowledged pushes, %d move attempts rolled"
            + " back, %d records forwarded in committed moves, %d violating, %.1f s, %d at once%n",
        ran.get(),
        first,
        acknowledged.get(),
        rolledBack.get(),
        forwarded.get(),
        failures.size(),
        secs,
        parallel);
    assertThat(failures).as(String.join("\n", failures)).isEmpty();
    assertThat(rolledBack.get()).as("moves rolled back by the faults").isPositive();
    assertThat(forwarded.get()).as("pushes forwarded after a cut").isPositive();
    assertThat(acknowledged.get()).as("acknowledged pushes").isGreaterThan(ran.get());
  }

  @Test
  @Timeout(value = 120)
  void movesCommittedWithoutMoveOut_areFoundAsLostPushesAndSlotsHeldTwice() {
    MoveResult r = run(0, MoveSettings.quiet().committingWithoutMoveOut());
    System.out.println("the injected defect found by seed 0:\n" + r.report());
    assertThat(r.verdict().lost()).as(r.report()).isPositive();
    assertThat(r.verdict().violations()).as(r.report()).anyMatch(v -> v.startsWith("TWO OWNERS"));
  }

  @Test
  @Timeout(value = 120)
  void sameSeed_replaysBitForBit() {
    for (long seed : new long[] {3, 42}) {
      MoveResult first = replay(seed);
      MoveResult second = replay(seed);
      String parted = first.firstDifference(second).orElse("the traces are equal");
      assertThat(second.history())
          .as("seed %d's history; %s", seed, parted)
          .isEqualTo(first.history());
      assertThat(second.steps()).as("seed %d's steps; %s", seed, parted).isEqualTo(first.steps());
      assertThat(second.traceHash())
          .as("seed %d's trace hash; %s", seed, parted)
          .isEqualTo(first.traceHash());
    }
  }

  private static MoveResult replay(long seed) {
    try (MoveSimulation s = new MoveSimulation(seed, MoveSettings.standard()).keepTrace()) {
      return s.run();
    }
  }

  private static MoveResult run(long seed, MoveSettings settings) {
    try (MoveSimulation s = new MoveSimulation(seed, settings)) {
      return s.run();
    }
  }
}
