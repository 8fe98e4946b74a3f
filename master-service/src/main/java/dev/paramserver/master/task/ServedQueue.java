package dev.paramserver.master.task;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.dataset.IndexedDataset;
import dev.paramserver.master.state.FenceLostException;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.MasterSnapshot;
import java.time.Clock;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job's state as this master serves it, and its persistence: whether this master serves (it
 * leads), the dataset and the task queue's {@link QueueCommits}. A change is made on a copy of the
 * queue and saved through the {@link JobStore} (a write fenced on the leadership) before it is
 * answered. A refused or unconfirmed save drops the in-memory state, stops serving (NOT_LEADER) and
 * tells the election to step down; the next leadership reloads the state from the store.
 *
 * <p>{@link #lock} guards the dataset and the commits; the parts of {@link MasterJob} hold it
 * around every call marked "lock held".
 */
final class ServedQueue {
  private static final Logger log = LoggerFactory.getLogger(ServedQueue.class);

  /** What a change returned, and the commit its caller waits for before it answers. */
  record Applied<T>(T result, QueueCommits.Batch batch) {}

  final Object lock = new Object();
  private final MasterProperties props;
  private final JobStore store;
  private final Clock clock;
  private final QueueCommits commits = new QueueCommits(lock, this::save);
  private volatile boolean serving;
  private volatile String identity = "";
  private volatile Supplier<Optional<String>> leaderAddress = Optional::empty;
  private volatile Runnable onFenceLost = () -> {};
  private volatile long lastSnapshotBytes;
  private IndexedDataset dataset;

  ServedQueue(MasterProperties props, JobStore store, Clock clock) {
    this.props = props;
    this.store = store;
    this.clock = clock;
  }

  void setLeaderAddress(Supplier<Optional<String>> leaderAddress) {
    this.leaderAddress = leaderAddress;
  }

  void setOnFenceLost(Runnable onFenceLost) {
    this.onFenceLost = onFenceLost;
  }

  boolean isServing() {
    return serving;
  }

  String identity() {
    return identity;
  }

  long lastSnapshotBytes() {
    return lastSnapshotBytes;
  }

  /** The dataset (lock held; null while none is set or this master does not serve). */
  IndexedDataset dataset() {
    return dataset;
  }

  /** The newest queue (lock held; null while no dataset is set or this master does not serve). */
  TaskQueue tip() {
    return commits.tip();
  }

  QueueCommits commits() {
    return commits;
  }

  /**
   * Loads the dataset and the queue's snapshot from the store and starts serving (lock held); a
   * dataset whose first snapshot was not saved starts its job now. Returns the queue (null: no
   * dataset yet).
   */
  TaskQueue load(String identity) {
    this.identity = identity;
    dataset = null;
    commits.reset(null);
    TaskQueue queue = null;
    Optional<DatasetIndex> index = store.loadDataset();
    if (index.isPresent()) {
      dataset = IndexedDataset.of(index.get());
      Optional<MasterSnapshot> snapshot = store.loadSnapshot();
      if (snapshot.isPresent()) {
        queue =
            TaskQueue.restore(snapshot.get(), dataset.taskRecords(), props.maxFailures(), clock);
        log.info(
            "loaded the job: {} tasks, pass {} of {}, {}",
            dataset.tasks(),
            queue.pass(),
            queue.totalPasses(),
            queue.status().getTasks().toString().replace('\n', ' '));
      } else {
        queue = newQueue(dataset);
        save(queue);
      }
      commits.reset(queue);
    }
    serving = true;
    return queue;
  }

  /** A new job's queue over {@code d}. */
  TaskQueue newQueue(IndexedDataset d) {
    return new TaskQueue(d.taskRecords(), props.passes(), props.maxFailures(), clock);
  }

  /**
   * Saves the dataset set by SetDataset with its first queue, and serves them (lock held).
   *
   * @throws ServiceException NOT_LEADER when the leadership was lost
   */
  void install(DatasetIndex index, IndexedDataset d, TaskQueue q) {
    try {
      store.saveDataset(index);
    } catch (FenceLostException e) {
      throw fenceLost(e);
    }
    save(q);
    dataset = d;
    commits.reset(q);
  }

  /** Stops serving at once: every call answers NOT_LEADER and the in-memory state is dropped. */
  void stop() {
    serving = false;
    synchronized (lock) {
      serving = false;
      dataset = null;
      commits.drop(
          new ServiceException(
              ErrorReason.NOT_LEADER,
              "this master stopped leading before the change was saved; find the leader through"
                  + " etcd (master/addr) and retry there"));
    }
  }

  /** Makes a change and answers once it is saved (with the changes of concurrent calls). */
  <T> T mutate(Function<TaskQueue, T> change) {
    Applied<T> a;
    synchronized (lock) {
      a = apply(change);
    }
    commits.await(a.batch());
    return a.result();
  }

  /**
   * Makes a change on a copy of the queue (lock held): a change that throws leaves the queue as it
   * was. The copy becomes the newest queue, to be saved before the change is answered.
   */
  <T> Applied<T> apply(Function<TaskQueue, T> change) {
    requireServing();
    TaskQueue current = requireQueue();
    TaskQueue copy = current.copy();
    T result = change.apply(copy);
    if (copy.version() == current.version()) {
      return new Applied<>(result, commits.newest());
    }
    return new Applied<>(result, commits.changed(copy));
  }

  /** {@code result} of a call that changed nothing, answered once what it saw is saved. */
  <T> Applied<T> unchanged(T result) {
    return new Applied<>(result, commits.newest());
  }

  private long save(TaskQueue q) {
    try {
      long bytes = store.saveSnapshot(q.snapshotBytes());
      lastSnapshotBytes = bytes;
      return bytes;
    } catch (FenceLostException e) {
      throw fenceLost(e);
    }
  }

  private ServiceException fenceLost(FenceLostException e) {
    log.warn("stepping down: {}", e.getMessage());
    stop();
    try {
      onFenceLost.run();
    } catch (RuntimeException ex) {
      log.warn("stepping down after a refused write failed", ex);
    }
    return new ServiceException(
        ErrorReason.NOT_LEADER,
        "this master lost its leadership while saving the job state ("
            + e.getMessage()
            + "); find the leader through etcd and retry there",
        e);
  }

  /** The newest queue (lock held), or NO_DATASET. */
  TaskQueue requireQueue() {
    TaskQueue queue = commits.tip();
    if (queue == null) {
      throw new ServiceException(
          ErrorReason.NO_DATASET, "no dataset is set: call SetDataset first");
    }
    return queue;
  }

  /** NOT_LEADER, naming the leader when it is known, unless this master serves. */
  void requireServing() {
    if (!serving) {
      Optional<String> leader = Optional.empty();
      try {
        leader = leaderAddress.get();
      } catch (RuntimeException e) {
        log.debug("could not look up the leader's address", e);
      }
      Optional<String> other = leader.filter(a -> !a.equals(identity) || identity.isEmpty());
      throw new ServiceException(
          ErrorReason.NOT_LEADER,
          other
              .map(a -> "this master is not the leader; the leader is at " + a)
              .orElse(
                  "this master is not the leader and no leader is known yet; retry shortly or"
                      + " find the leader through etcd (master/addr)"),
          other.map(a -> Map.of("leader", a)).orElse(Map.of()));
    }
  }
}
