package dev.paramserver.master.task;

import com.google.protobuf.Value;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.dataset.DatasetIndexer;
import dev.paramserver.master.dataset.IndexedDataset;
import dev.paramserver.master.dataset.TaskSizing;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.SetDatasetResponse;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SetDataset: the first call indexes the dataset (outside the lock: it reads every file's chunk
 * headers), sizes its tasks and starts the job; the same globs again are a no-op, others are
 * refused. The job's hyperparameters are checked and kept with the dataset.
 */
final class DatasetSetup {
  private static final Logger log = LoggerFactory.getLogger(DatasetSetup.class);

  /** Most hyperparameters, and longest name or text value, taken with SetDataset. */
  static final int MAX_HYPERPARAMETERS = 128;

  static final int MAX_HYPERPARAMETER_CHARS = 256;

  private final ServedQueue served;
  private final MasterProperties props;
  private final DatasetIndexer indexer;

  DatasetSetup(ServedQueue served, MasterProperties props, DatasetIndexer indexer) {
    this.served = served;
    this.props = props;
    this.indexer = indexer;
  }

  SetDatasetResponse setDataset(
      List<String> globs, String trainer, Map<String, Value> hyperparameters) {
    served.requireServing();
    checkHyperparameters(hyperparameters);
    synchronized (served.lock) {
      if (served.dataset() != null) {
        return existing(globs);
      }
    }
    // index outside the lock: it reads every file's chunk headers
    DatasetIndex indexed = indexer.index(globs, props.chunksPerTask());
    DatasetIndex index =
        indexed.toBuilder()
            .setChunksPerTask(
                TaskSizing.chunksPerTask(indexed, props.chunksPerTask(), props.taskRecords()))
            .putAllHyperparameters(hyperparameters)
            .build();
    synchronized (served.lock) {
      served.requireServing();
      if (served.dataset() != null) {
        return existing(globs);
      }
      IndexedDataset d = IndexedDataset.of(index);
      TaskQueue q = served.newQueue(d);
      served.install(index, d, q);
      log.info(
          "dataset set by trainer '{}': {} files, {} chunks, {} tasks, {} records, {} passes",
          trainer,
          d.files(),
          d.chunks(),
          d.tasks(),
          d.records(),
          q.totalPasses());
      return response(d, q.totalPasses(), false);
    }
  }

  /** Hyperparameters are kept in the dataset's etcd record: a few short scalars only. */
  private static void checkHyperparameters(Map<String, Value> hyperparameters) {
    if (hyperparameters.size() > MAX_HYPERPARAMETERS) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "SetDataset carries "
              + hyperparameters.size()
              + " hyperparameters; at most "
              + MAX_HYPERPARAMETERS
              + " are kept");
    }
    hyperparameters.forEach(
        (name, v) -> {
          boolean scalar =
              v.hasNumberValue()
                  || v.hasBoolValue()
                  || (v.hasStringValue()
                      && v.getStringValue().length() <= MAX_HYPERPARAMETER_CHARS);
          if (name.isEmpty() || name.length() > MAX_HYPERPARAMETER_CHARS || !scalar) {
            throw new ServiceException(
                ErrorReason.BAD_ARGUMENT,
                "hyperparameter '"
                    + name.substring(0, Math.min(name.length(), 64))
                    + "' is refused: names of 1 to "
                    + MAX_HYPERPARAMETER_CHARS
                    + " characters with a number, a boolean or a text of at most "
                    + MAX_HYPERPARAMETER_CHARS
                    + " characters are kept");
          }
        });
  }

  /** The answer to a SetDataset once the dataset is set (lock held). */
  private SetDatasetResponse existing(List<String> globs) {
    IndexedDataset dataset = served.dataset();
    if (!dataset.sameGlobs(globs)) {
      throw new ServiceException(
          ErrorReason.DATASET_CONFLICT,
          "the dataset is already set to "
              + dataset.globs()
              + "; SetDataset with "
              + globs
              + " is refused (one dataset per job: start a new job for another dataset)");
    }
    return response(dataset, served.tip().totalPasses(), true);
  }

  private static SetDatasetResponse response(IndexedDataset d, int passes, boolean alreadySet) {
    return SetDatasetResponse.newBuilder()
        .setAlreadySet(alreadySet)
        .setFiles(d.files())
        .setChunks(d.chunks())
        .setTasks(d.tasks())
        .setPasses(passes)
        .setRecords(d.records())
        .build();
  }
}
