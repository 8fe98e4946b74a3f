package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Replays of a seed stay bit for bit while the JVM is busy: threads that spin and allocate (so the
 * simulation's threads are preempted and the collector runs) between any two of its steps. What
 * leaks real time into a run (a gRPC deadline read off the system clock, a real thread, a timed
 * wait on the real clock, an unseeded random) shows up here as a trace that parts, with the first
 * step where it does.
 *
 * <p>System properties: {@code simulation.replaySeeds} (comma-separated, "7,51,4242,3,1000" by
 * default) and {@code simulation.replayRounds} (how many times each seed is replayed twice, 1).
 */
class SimulationReplayUnderLoadTest {
  @BeforeAll
  static void quiet() {
    ReplicationSimulationTest.quiet();
  }

  @AfterAll
  static void loud() {
    ReplicationSimulationTest.loud();
  }

  @Test
  @Timeout(value = 60)
  void seedsReplayedTwice_inABusyJvm_giveTheSameTrace() throws InterruptedException {
    String seeds = System.getProperty("simulation.replaySeeds", "7,51,4242,3,1000");
    int rounds = Integer.getInteger("simulation.replayRounds", 1);
    List<String> parted = new ArrayList<>();
    int replays = 0;
    AtomicBoolean busy = new AtomicBoolean(true);
    List<Thread> load = startLoad(busy, 2 * Runtime.getRuntime().availableProcessors());
    try {
      for (int r = 0; r < rounds; r++) {
        for (String seed : seeds.split(",")) {
          long s = Long.parseLong(seed.trim());
          SimulationResult first = ReplicationSimulationTest.replay(s);
          SimulationResult second = ReplicationSimulationTest.replay(s);
          replays++;
          first.firstDifference(second).ifPresent(parted::add);
          if (first.traceHash() != second.traceHash() && parted.isEmpty()) {
            parted.add("seed " + s + ": equal traces, different hashes");
          }
        }
      }
    } finally {
      busy.set(false);
      for (Thread t : load) {
        t.join(TimeUnit.SECONDS.toMillis(5));
      }
    }
    System.out.printf("SIMULATION REPLAYS %d pairs, %d parted%n", replays, parted.size());
    assertThat(parted).as(String.join("\n", parted)).isEmpty();
  }

  /** Threads that compute and allocate until {@code busy} is false. */
  private static List<Thread> startLoad(AtomicBoolean busy, int threads) {
    List<Thread> load = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Thread t =
          new Thread(
              () -> {
                long x = 0;
                List<long[]> garbage = new ArrayList<>();
                while (busy.get()) {
                  garbage.add(new long[1024]);
                  if (garbage.size() > 256) {
                    garbage.clear();
                  }
                  for (int k = 0; k < 10_000; k++) {
                    x = x * 6364136223846793005L + k;
                  }
                }
                if (x == 42) {
                  System.out.print("");
                }
              },
              "replay-load-" + i);
      t.setDaemon(true);
      t.start();
      load.add(t);
    }
    return load;
  }
}
