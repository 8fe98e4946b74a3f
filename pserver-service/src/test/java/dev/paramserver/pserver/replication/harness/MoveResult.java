package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.harness.MoveHistory.Event;
import java.util.List;
import java.util.Optional;

/**
 * A move simulation run's outcome: the checker's verdict, the trace hash, what the nemesis and the
 * coordinator did and every push's history; {@code trace} is the run's every step in words when it
 * was kept ({@link MoveSimulation#keepTrace}), else empty.
 */
record MoveResult(
    long seed,
    MoveHistory.Verdict verdict,
    long traceHash,
    long steps,
    List<String> nemesis,
    List<String> moves,
    Counts counts,
    List<Event> history,
    List<String> trace) {

  /** How many moves were committed and rolled back, and records forwarded in the committed. */
  record Counts(int committed, int rolledBack, long forwarded) {}

  private static final int CONTEXT = 5;

  boolean ok() {
    return verdict.ok();
  }

  /** Everything needed to read a failure again, its seed and its replay command first. */
  String report() {
    StringBuilder s = new StringBuilder();
    s.append("move simulation seed ").append(seed).append(": ").append(verdict);
    s.append(", ").append(counts).append('\n');
    s.append("replay: ./mvnw -B -o -pl pserver-service -am -DskipITs")
        .append(
            " -Dtest='MoveSimulationTest#manySchedules*' -Dsurefire.failIfNoSpecifiedTests=false")
        .append(" -Dmovesimulation.seed=")
        .append(seed)
        .append(" verify\n");
    nemesis.forEach(n -> s.append("  nemesis ").append(n).append('\n'));
    moves.forEach(m -> s.append("  coordinator ").append(m).append('\n'));
    history.forEach(e -> s.append("  ").append(e).append('\n'));
    return s.toString();
  }

  /** The first entry where a replay's kept trace differs from this run's; empty when equal. */
  Optional<String> firstDifference(MoveResult replay) {
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
    s.append("seed ").append(seed).append(": the runs part at trace entry ").append(i).append('\n');
    for (int j = Math.max(0, i - CONTEXT); j < i; j++) {
      s.append("  both:   ").append(a.get(j)).append('\n');
    }
    s.append("  first:  ").append(i < a.size() ? a.get(i) : "(ended)").append('\n');
    s.append("  replay: ").append(i < b.size() ? b.get(i) : "(ended)").append('\n');
    return Optional.of(s.toString());
  }
}
