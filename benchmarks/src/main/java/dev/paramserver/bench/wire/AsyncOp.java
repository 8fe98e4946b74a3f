package dev.paramserver.bench.wire;

/**
 * One pipelined operation of a benchmark client (a push, a pull, an echo...), started without
 * waiting for the previous ones: {@link DepthRunner} keeps a fixed number of them in flight on one
 * client, as ps-lite's benchmark does.
 */
public interface AsyncOp extends AutoCloseable {
  /** Called once when an operation started by {@link #start} has finished (or failed). */
  interface Completion {
    void done();

    void failed(Throwable t);
  }

  /** Starts one operation; {@code c} is called from any thread when it has finished. */
  void start(Completion c) throws Exception;

  @Override
  default void close() {}

  /** Creates the client (its own channel or socket) whose operations a run keeps in flight. */
  @FunctionalInterface
  interface Factory {
    AsyncOp create() throws Exception;
  }
}
