package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.WalRecord;

/**
 * Where a shard records the pushes it applies before it answers them (a write-ahead log), and cuts
 * the record at each checkpoint. The shard calls {@link #append} under its read lock and {@link
 * #cut} under its write lock, so a checkpoint holds exactly the pushes logged before its cut.
 */
public interface PushLog {
  /** No log: nothing survives a crash but the checkpoints. */
  PushLog NONE =
      new PushLog() {
        @Override
        public void append(WalRecord record) {}

        @Override
        public long cut() {
          return 0;
        }

        @Override
        public boolean enabled() {
          return false;
        }
      };

  /**
   * Appends the pushes applied together as one update; returns once the record is as durable as the
   * log's sync setting promises.
   *
   * @throws java.io.UncheckedIOException when the record could not be written
   */
  void append(WalRecord record);

  /**
   * Starts a new segment: the records before it are in the checkpoint being written.
   *
   * @return the new segment's number (the first to replay after that checkpoint)
   */
  long cut();

  /** A record written to the log, perhaps not yet as durable as the log's sync setting promises. */
  interface Written {
    /** Nothing to wait for. */
    Written DURABLE = () -> {};

    /**
     * Returns once the record is as durable as the sync setting promises.
     *
     * @throws java.io.UncheckedIOException when it cannot be made so
     */
    void awaitDurable();
  }

  /**
   * Writes the record in the log's order without waiting for the disk: {@link Written#awaitDurable}
   * does. The shard writes under its order lock, and waits outside it, so that concurrent pushes
   * share one fsync.
   *
   * @throws java.io.UncheckedIOException when the record could not be written
   */
  default Written write(WalRecord record) {
    append(record);
    return Written.DURABLE;
  }

  /** False for {@link #NONE}. */
  boolean enabled();

  /** True when {@link #append} waits for the disk (so it must not run on a transport thread). */
  default boolean blocks() {
    return false;
  }
}
