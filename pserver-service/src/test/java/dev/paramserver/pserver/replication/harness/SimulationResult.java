package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.harness.SimulationHistory.Event;
import java.util.List;
import java.util.Optional;

/**
 * A run's outcome: the checker's verdict, the trace hash and what happened; {@code trace} is the
 * run's every step in words when it was kept ({@link Simulation#keepTrace}), else empty.
 */
record SimulationResult(
    long seed,
    SimulationHistory.Verdict verdict,
    long traceHash,
    long steps,
    List<String> nemesis,
    List<Event> history,
    List<String> trace) {
  private static final int CONTEXT = 5;

  boolean ok() {
    return verdict.ok();
  }

  /** Everything needed to read a failure again, its seed first. */
  String report() {
    StringBuilder s = new StringBuilder();
    s.append("simulation seed ").append(seed).append(": ").append(verdict).append('\n');
    s.append("replay: ./mvnw -B -o -pl pserver-service -am -DskipITs")
        .append(
            " -Dtest='ReplicationSimulationTest#manySchedules*' -Dsurefire.failIfNoSpecifiedTests=false")
        .append(" -Dsimulation.seed=")
        .append(seed)
        .append(" verify\n");
    nemesis.forEach(n -> s.append("  nemesis ").append(n).append('\n'));
    history.forEach(e -> s.append("  ").append(e).append('\n'));
    return s.toString();
  }

  /**
   * Where a replay of this run's seed went another way: the first entry of the kept traces that
   * differs, with both runs' entry and the few before it; empty when the traces are equal.
   */
  Optional<String> firstDifference(SimulationResult replay) {
    List<String> a = trace;
    List<String> b = replay.trace;
    int n = Math.min(a.size(), b.size());
    int i = 0;
    while (i < n && a.get(i).equals(b.get(i))) {
      i++;
    }
    if (i == n && a.size() == b.size()) {
      return Optional.empty();
    }
    StringBuilder s = new StringBuilder();
    s.append("seed ")
        .append(seed)
        .append(": the runs part at trace entry ")
        .append(i)
        .append(" (of ")
        .append(a.size())
        .append(" and ")
        .append(b.size())
        .append(")\n");
    for (int j = Math.max(0, i - CONTEXT); j < i; j++) {
      s.append("  both:   ").append(a.get(j)).append('\n');
    }
    s.append("  first:  ").append(i < a.size() ? a.get(i) : "(ended)").append('\n');
    s.append("  replay: ").append(i < b.size() ? b.get(i) : "(ended)").append('\n');
    return Optional.of(s.toString());
  }
}
