package dev.paramserver.master.state;

import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.MasterSnapshot;
import java.util.Optional;

/**
 * Where the leader keeps the job's state. Saves are fenced: they succeed only while this master
 * holds the leadership, and throw {@link FenceLostException} otherwise (or when the store cannot
 * confirm the write), after which the master must stop serving.
 */
public interface JobStore {

  /** The dataset index saved by a leader, if the dataset was set. */
  Optional<DatasetIndex> loadDataset();

  /** The latest snapshot of the task queues, if any. */
  Optional<MasterSnapshot> loadSnapshot();

  /** Saves the dataset index (once, when the dataset is set). */
  void saveDataset(DatasetIndex index);

  /**
   * Saves a serialized {@link MasterSnapshot} of the task queues; returns its stored (compressed)
   * size in bytes.
   */
  long saveSnapshot(byte[] serializedSnapshot);

  /** Saves a snapshot of the task queues; returns its stored (compressed) size in bytes. */
  default long saveSnapshot(MasterSnapshot snapshot) {
    return saveSnapshot(snapshot.toByteArray());
  }

  /** Keeps nothing: for a master run without persistence (unit tests, tools). */
  JobStore NONE =
      new JobStore() {
        @Override
        public Optional<DatasetIndex> loadDataset() {
          return Optional.empty();
        }

        @Override
        public Optional<MasterSnapshot> loadSnapshot() {
          return Optional.empty();
        }

        @Override
        public void saveDataset(DatasetIndex index) {}

        @Override
        public long saveSnapshot(byte[] serializedSnapshot) {
          return 0;
        }
      };
}
