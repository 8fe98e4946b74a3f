package dev.paramserver.bench.wire;

/** One closed-loop operation of a benchmark client thread (a push, a pull, an echo...). */
public interface Op extends AutoCloseable {
  /** Runs one operation to completion. */
  void run() throws Exception;

  @Override
  default void close() {}

  /** Creates one {@link Op} per client thread (each with its own channel or socket). */
  @FunctionalInterface
  interface Factory {
    Op create() throws Exception;
  }
}
