package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.harness.SimulationHistory.Event;
import java.util.List;

/** A run's outcome: the checker's verdict, the trace hash and what happened. */
record SimulationResult(
    long seed,
    SimulationHistory.Verdict verdict,
    long traceHash,
    long steps,
    List<String> nemesis,
    List<Event> history) {
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
}
