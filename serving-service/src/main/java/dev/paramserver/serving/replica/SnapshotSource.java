package dev.paramserver.serving.replica;

import java.util.Optional;

/** Where a replica loads whole models from: job-wide checkpoints, or a saved model file. */
public interface SnapshotSource {
  /** No snapshots: the replica serves what it copies from the primaries. */
  SnapshotSource NONE =
      new SnapshotSource() {
        @Override
        public Optional<Snapshot> latest(int shards) {
          return Optional.empty();
        }

        @Override
        public Snapshot checkpoint(long id, int shards) {
          throw new IllegalStateException("this replica has no source of checkpoints");
        }
      };

  /**
   * The newest snapshot of {@code shards} shards to serve before (or instead of) following the
   * primaries; empty when there is none.
   *
   * @throws RuntimeException when one exists but cannot be read
   */
  Optional<Snapshot> latest(int shards);

  /**
   * Job-wide checkpoint {@code id}, to pin the replica to.
   *
   * @throws java.util.NoSuchElementException when it is not a complete checkpoint of {@code shards}
   *     shards
   * @throws IllegalStateException when this source has no checkpoints (a model file)
   * @throws java.io.UncheckedIOException when a file of it cannot be read
   */
  Snapshot checkpoint(long id, int shards);
}
