package dev.paramserver.pserver.replication.harness;

import java.util.ArrayList;
import java.util.List;

/**
 * What a run of the {@link SimulationScheduler} did: a hash of every choice, time and observed
 * value (always), the same in words (when kept: it tells where two runs of a seed part), and what
 * leaked into the run from outside its seed.
 */
final class SimulationTrace {
  private long hash = 1125899906842597L;
  // null unless kept
  private List<String> lines;
  private final List<String> leaks = new ArrayList<>();

  /** Mixes {@code value} into the hash; a kept trace adds {@code what} it is, at which step. */
  synchronized void record(long value, String what, long step, long now) {
    hash = 31 * hash + value;
    hash ^= hash >>> 29;
    if (lines != null) {
      lines.add("step " + step + " at " + now + " ns: " + what + " " + value);
    }
  }

  synchronized long hash() {
    return hash;
  }

  /** From now on, keeps the trace in words. */
  synchronized void keep() {
    if (lines == null) {
      lines = new ArrayList<>();
    }
  }

  synchronized boolean kept() {
    return lines != null;
  }

  /** The kept trace (empty unless {@link #keep} was called). */
  synchronized List<String> lines() {
    return lines == null ? List.of() : List.copyOf(lines);
  }

  synchronized void leak(String what) {
    if (leaks.size() < 20) {
      leaks.add(what);
    }
  }

  synchronized List<String> leaks() {
    return List.copyOf(leaks);
  }

  /**
   * A task's class; a lambda's without what the JVM appends (its number and address differ from one
   * JVM to the next).
   */
  static String describe(Object task) {
    String name = task.getClass().getName();
    int lambda = name.indexOf("$$Lambda");
    return lambda < 0 ? name : name.substring(0, lambda + "$$Lambda".length());
  }

  /** The first frame of the running thread outside this harness (the product code that waits). */
  static String caller() {
    for (StackTraceElement e : new Throwable().getStackTrace()) {
      if (!e.getClassName().startsWith(SimulationTrace.class.getPackageName())) {
        return e.getClassName() + "." + e.getMethodName() + ":" + e.getLineNumber();
      }
    }
    return "?";
  }
}
