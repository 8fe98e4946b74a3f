package dev.paramserver.master.task;

import com.google.protobuf.Value;
import dev.paramserver.master.MasterProperties;
import dev.paramserver.master.dataset.Dataset;
import dev.paramserver.master.dataset.DatasetIndexer;
import dev.paramserver.master.dataset.TaskSizing;
import dev.paramserver.master.state.FenceLostException;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.DatasetIndex;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.LossWindow;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.proto.v1.TaskCounts;
import dev.paramserver.rpc.ServiceException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongConsumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master's job: the dataset and its {@link TaskQueue}, served only while this master leads.
 *
 * <p>Every change is made on a copy of the queue and saved through the {@link JobStore} (a write
 * fenced on the leadership) before it is answered; the changes of concurrent calls are saved
 * together, several per write ({@link QueueCommits}). A refused or unconfirmed save fails every
 * call whose change it held, drops the in-memory state, stops serving (NOT_LEADER) and tells the
 * election to step down; the next leadership reloads the state from the store. Thread-safe.
 */
public final class MasterJob {
  private static final Logger log = LoggerFactory.getLogger(MasterJob.class);

  private final MasterProperties props;
  private final JobStore store;
  private final Clock clock;
  private final TaskTimeouts timeouts;
  private final DatasetIndexer indexer;
  private final Object lock = new Object();
  private volatile boolean serving;
  private volatile String identity = "";
  private volatile Supplier<Optional<String>> leaderAddress = Optional::empty;
  private volatile Supplier<String> adminAddress = () -> "";
  private volatile Runnable onFenceLost = () -> {};
  private final List<Runnable> servingListeners = new CopyOnWriteArrayList<>();
  private final UnansweredTasks unanswered = new UnansweredTasks();
  private volatile long lastSnapshotBytes;
  private volatile JobEventListener events = (kind, message) -> {};
  private volatile long lossEveryRecords;
  private volatile Consumer<List<LossWindow>> lossListener = windows -> {};
  private volatile LongConsumer lossRebase = records -> {};
  private Dataset dataset;
  private final QueueCommits commits = new QueueCommits(lock, this::saveQueue);

  public MasterJob(MasterProperties props, JobStore store, Clock clock) {
    this(props, store, clock, DatasetIndexer.localOnly());
  }

  /**
   * @param indexer reads the dataset's chunk headers (local files, or S3 objects by ranged reads)
   */
  public MasterJob(MasterProperties props, JobStore store, Clock clock, DatasetIndexer indexer) {
    this.indexer = indexer;
    this.props = props;
    this.store = store;
    this.clock = clock;
    this.timeouts = new TaskTimeouts(props.taskTimeout(), props.adaptiveTimeout());
  }

  /** Where to find the leader's address for NOT_LEADER answers. */
  public void setLeaderAddress(Supplier<Optional<String>> leaderAddress) {
    this.leaderAddress = leaderAddress;
  }

  /** Where to find this master's HTTP address, reported in the status. */
  public void setAdminAddress(Supplier<String> adminAddress) {
    this.adminAddress = adminAddress;
  }

  /** Told of task failures, timeouts and stops (for the console's event list). */
  public void setEventListener(JobEventListener events) {
    this.events = events;
  }

  /** What {@link MasterJob} tells its {@link #setEventListener event listener}. */
  @FunctionalInterface
  public interface JobEventListener {
    /**
     * @param kind "task-failed", "task-timeout" or "job-stopped"
     * @param message what happened, for a person
     */
    void onEvent(String kind, String message);
  }

  /**
   * Asks the trainers for their training loss about every {@code everyRecords} records (in every
   * task handed out) and gives the loss windows of each accepted task report to {@code listener}
   * (on the reporting call's thread, after the report was saved); {@code rebase} hears the records
   * the job has trained when this master starts serving, before it takes any report.
   */
  public void setLossTracking(
      long everyRecords, Consumer<List<LossWindow>> listener, LongConsumer rebase) {
    this.lossListener = listener;
    this.lossRebase = rebase;
    this.lossEveryRecords = everyRecords;
  }

  /**
   * Runs {@code listener} each time this master starts serving, once the job is loaded and before
   * the election publishes its address (on the election's thread): for what must be rebuilt from
   * etcd before the job goes on, such as which trainers are gone.
   */
  public void onServing(Runnable listener) {
    servingListeners.add(listener);
  }

  /** The trainers holding a pending task now (empty when not serving). */
  public Set<String> holders() {
    synchronized (lock) {
      TaskQueue q = commits.tip();
      return serving && q != null ? q.holders() : Set.of();
    }
  }

  /** Called (once per loss) when a fenced save was refused: the election steps down. */
  public void setOnFenceLost(Runnable onFenceLost) {
    this.onFenceLost = onFenceLost;
  }

  /**
   * Loads the dataset and snapshot from the store and starts serving as the leader. Pending tasks
   * keep the deadlines they were given (the timeout checker re-arms on them).
   *
   * @param identity this master's {@code host:grpcPort}
   */
  public void startServing(String identity) {
    synchronized (lock) {
      this.identity = identity;
      dataset = null;
      commits.reset(null);
      Optional<DatasetIndex> index = store.loadDataset();
      if (index.isPresent()) {
        dataset = Dataset.of(index.get());
        Optional<MasterSnapshot> snapshot = store.loadSnapshot();
        TaskQueue queue;
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
          // the dataset was saved but its first snapshot was not: start the job now
          queue = newQueue(dataset);
          saveQueue(queue);
        }
        commits.reset(queue);
        // before any report is taken: the loss's step goes on from what the job trained
        lossRebase.accept(
            queue.status().getPassesList().stream().mapToLong(PassStatus::getRecords).sum());
      }
      serving = true;
    }
    try {
      takeBackUnanswered();
    } catch (RuntimeException e) {
      log.warn("taking back the tasks of failed answers failed: {}", e.getMessage());
    }
    for (Runnable listener : servingListeners) {
      try {
        listener.run();
      } catch (RuntimeException e) {
        log.warn("a listener of this master's start of service failed", e);
      }
    }
  }

  /** Stops serving at once: every call answers NOT_LEADER and the in-memory state is dropped. */
  public void stopServing() {
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

  public boolean isServing() {
    return serving;
  }

  public String identity() {
    return identity;
  }

  /** Bytes of the last snapshot saved (compressed), 0 before the first. */
  public long lastSnapshotBytes() {
    return lastSnapshotBytes;
  }

  /** Sets the dataset: the first call wins, the same globs again are a no-op. */
  public SetDatasetResponse setDataset(List<String> globs, String trainer) {
    return setDataset(globs, trainer, Map.of());
  }

  /**
   * Sets the dataset, kept with the job's {@code hyperparameters} (saved with it): the first call
   * wins, the same globs again are a no-op.
   */
  public SetDatasetResponse setDataset(
      List<String> globs, String trainer, Map<String, Value> hyperparameters) {
    requireServing();
    checkHyperparameters(hyperparameters);
    synchronized (lock) {
      if (dataset != null) {
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
    synchronized (lock) {
      requireServing();
      if (dataset != null) {
        return existing(globs);
      }
      Dataset d = Dataset.of(index);
      TaskQueue q = newQueue(d);
      try {
        store.saveDataset(index);
      } catch (FenceLostException e) {
        throw fenceLost(e);
      }
      saveQueue(q);
      dataset = d;
      commits.reset(q);
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

  /** Most hyperparameters, and longest name or text value, taken with SetDataset. */
  static final int MAX_HYPERPARAMETERS = 128;

  static final int MAX_HYPERPARAMETER_CHARS = 256;

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

  private SetDatasetResponse existing(List<String> globs) {
    if (!dataset.sameGlobs(globs)) {
      throw new ServiceException(
          ErrorReason.DATASET_CONFLICT,
          "the dataset is already set to "
              + dataset.globs()
              + "; SetDataset with "
              + globs
              + " is refused (one dataset per job: start a new job for another dataset)");
    }
    return response(dataset, commits.tip().totalPasses(), true);
  }

  private static SetDatasetResponse response(Dataset d, int passes, boolean alreadySet) {
    return SetDatasetResponse.newBuilder()
        .setAlreadySet(alreadySet)
        .setFiles(d.files())
        .setChunks(d.chunks())
        .setTasks(d.tasks())
        .setPasses(passes)
        .setRecords(d.records())
        .build();
  }

  /** The hyperparameters kept with the dataset (empty while none is set, or none were sent). */
  public Map<String, Value> hyperparameters() {
    synchronized (lock) {
      return dataset == null ? Map.of() : dataset.hyperparameters();
    }
  }

  /**
   * A task reported trained: its id and dispatch epoch, and its training loss in windows (empty:
   * none).
   */
  public record Finished(long taskId, long epoch, List<LossWindow> loss) {
    public Finished(long taskId, long epoch) {
      this(taskId, epoch, List.of());
    }
  }

  /** The next task of {@code pass} for the trainer, or why there is none. */
  public GetTaskResponse getTask(String trainer, int pass) {
    return getTask(trainer, pass, List.of(), 0, 1);
  }

  /** Most tasks one GetTask hands out. */
  static final int MAX_TASKS_PER_CALL = 16;

  /**
   * Records the tasks {@code finished} (as {@link #taskFinished} does), then hands out the next
   * task of {@code pass} for the trainer, or says why there is none: one change, saved once.
   *
   * <p>With {@code holdMs}, a trainer that holds no task of the pass is not told to wait at once:
   * the answer is held for up to {@code holdMs} (at most {@code wait-retry}) and given as soon as
   * the job changes (a task back in todo, the pass over), so that trainers start the next pass
   * together rather than a retry interval late. A trainer that holds a task is answered at once,
   * since the pass may be waiting for that task.
   *
   * <p>With {@code maxTasks} above 1, up to that many tasks (at most {@value #MAX_TASKS_PER_CALL})
   * go out in one answer, and one commit, within a fair share of what remains ({@link
   * TaskQueue#leaseShare}).
   */
  public GetTaskResponse getTask(
      String trainer, int pass, List<Finished> finished, long holdMs, int maxTasks) {
    return getTask(trainer, pass, finished, holdMs, maxTasks, "");
  }

  /**
   * {@link #getTask(String, int, List, long, int)} for GetTask request {@code requestId} (empty:
   * none): if tasks handed out in the answer to that request are still pending with the trainer, a
   * retry whose first answer was lost on the wire (saved, yet never received; maybe by another
   * master) gets them again instead of new ones, which would leave them to their timeouts. Its
   * {@code finished} reports were recorded with the first attempt.
   */
  public GetTaskResponse getTask(
      String trainer,
      int pass,
      List<Finished> finished,
      long holdMs,
      int maxTasks,
      String requestId) {
    Dataset ds;
    List<Report> reports = new ArrayList<>();
    List<Dispatch> extra = new ArrayList<>();
    int want = Math.max(1, Math.min(maxTasks, MAX_TASKS_PER_CALL));
    // only an asynchronous trainer lets the master hold its WAIT answers: it need not take part in
    // synchronous steps, nor wait for the others at a pass's end, so it may lease ahead
    boolean ahead = holdMs > 0;
    boolean held = false;
    Applied<Dispatch> a;
    synchronized (lock) {
      requireServing();
      TaskQueue q = requireQueue();
      ds = dataset;
      List<Dispatch> again = q.pendingUnder(trainer, requestId);
      if (!again.isEmpty()) {
        log.info(
            "GetTask {} of trainer '{}' is a retry of an answer that did not reach it: its {}"
                + " task(s) go out again",
            requestId,
            trainer,
            again.size());
        extra.addAll(again.subList(1, again.size()));
        a = new Applied<>(again.get(0), commits.newest());
      } else if (!finished.isEmpty()) {
        a =
            apply(
                c -> {
                  finished.forEach(f -> reports.add(c.finished(f.taskId(), f.epoch())));
                  return next(c, trainer, pass, want, ahead, extra, requestId);
                });
      } else {
        a = dispatch(q, trainer, pass, want, ahead, extra, requestId);
      }
    }
    try {
      commits.await(a.batch());
    } catch (RuntimeException e) {
      unanswered.note(trainer, a.result(), extra);
      throw e;
    }
    Dispatch d = a.result();
    long hold = Math.min(TimeUnit.MILLISECONDS.toNanos(holdMs), props.waitRetry().toNanos());
    long until = System.nanoTime() + hold;
    while (hold > 0 && d.outcome() == Dispatch.Outcome.WAIT) {
      synchronized (lock) {
        requireServing();
        if (requireQueue().holds(trainer)) {
          break;
        }
        held = true;
        long left = until - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(lock, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
        requireServing();
        ds = dataset;
        a = dispatch(requireQueue(), trainer, pass, want, ahead, extra, requestId);
      }
      try {
        commits.await(a.batch());
      } catch (RuntimeException e) {
        unanswered.note(trainer, a.result(), extra);
        throw e;
      }
      d = a.result();
    }
    for (int i = 0; i < reports.size(); i++) {
      noteFinished(trainer, finished.get(i), reports.get(i));
    }
    GetTaskResponse.Builder b =
        GetTaskResponse.newBuilder()
            .setOutcome(GetTaskResponse.Outcome.valueOf(d.outcome().name()))
            .setCurrentPass(d.currentPass())
            .setTotalPasses(d.totalPasses())
            .setReason(d.reason());
    switch (d.outcome()) {
      case TASK -> {
        b.setTask(task(ds, d)).setLossEveryRecords(lossEveryRecords);
        for (Dispatch e : extra) {
          b.addMoreTasks(task(ds, e));
        }
      }
      case WAIT, PASS_NOT_STARTED ->
          b.setRetryAfterMs(
              held && d.outcome() == Dispatch.Outcome.WAIT
                  ? 0
                  : (int) props.waitRetry().toMillis());
      default -> {}
    }
    return b.build();
  }

  private static Task task(Dataset ds, Dispatch d) {
    return Task.newBuilder()
        .setId(d.taskId())
        .setEpoch(d.epoch())
        .setPass(d.taskPass())
        .addAllChunks(ds.chunksOf(d.taskId()))
        .build();
  }

  private Applied<Dispatch> dispatch(
      TaskQueue q,
      String trainer,
      int pass,
      int want,
      boolean ahead,
      List<Dispatch> extra,
      String requestId) {
    return q.canDispatch(pass, ahead)
        ? apply(c -> next(c, trainer, pass, want, ahead, extra, requestId))
        // changes nothing, but answers from changes that may not be saved yet
        : new Applied<>(q.next(trainer, pass, timeouts.current(), ahead), commits.newest());
  }

  /**
   * The next task for the trainer, and up to {@code want - 1} more into {@code extra}. The k-th
   * task of an answer gets k task timeouts, since the trainer starts it only after the ones before.
   */
  private Dispatch next(
      TaskQueue c,
      String trainer,
      int pass,
      int want,
      boolean ahead,
      List<Dispatch> extra,
      String requestId) {
    int share = Math.min(want, c.leaseShare(trainer));
    Duration timeout = timeouts.current();
    Dispatch first = c.next(trainer, pass, timeout, ahead);
    while (first.outcome() == Dispatch.Outcome.TASK
        && extra.size() + 1 < share
        && c.canDispatch(pass, ahead)) {
      extra.add(c.next(trainer, pass, timeout.multipliedBy(extra.size() + 2), ahead));
    }
    if (first.outcome() == Dispatch.Outcome.TASK && !requestId.isEmpty()) {
      c.handedOutUnder(first.taskId(), requestId);
      extra.forEach(e -> c.handedOutUnder(e.taskId(), requestId));
    }
    return first;
  }

  /** A trainer reports a task trained; false if the report was stale or a duplicate. */
  public boolean taskFinished(String trainer, long taskId, long epoch) {
    return taskFinished(trainer, new Finished(taskId, epoch));
  }

  /** A trainer reports a task trained; false if the report was stale or a duplicate. */
  public boolean taskFinished(String trainer, Finished f) {
    Report r = mutate(q -> q.finished(f.taskId(), f.epoch()));
    noteFinished(trainer, f, r);
    return r.accepted();
  }

  private void noteFinished(String trainer, Finished f, Report r) {
    if (r.accepted()) {
      timeouts.record(r.durationMs());
      if (!f.loss().isEmpty()) {
        lossListener.accept(f.loss());
      }
    } else if (r.duplicate()) {
      log.info(
          "task {} epoch {} reported finished again by '{}' (duplicate)",
          f.taskId(),
          f.epoch(),
          trainer);
    }
  }

  /** A trainer reports a task failed or hands it back; false if the report was stale. */
  public boolean taskFailed(
      String trainer, long taskId, long epoch, String reason, boolean handedBack) {
    Report r = mutate(q -> q.failed(taskId, epoch, reason, handedBack));
    if (r.accepted()) {
      log.info(
          "task {} epoch {} {} by '{}': {}",
          taskId,
          epoch,
          handedBack ? "handed back" : "failed",
          trainer,
          reason);
      if (!handedBack) {
        events.onEvent(
            "task-failed", "task " + taskId + " failed on trainer '" + trainer + "': " + reason);
      }
    }
    return r.accepted();
  }

  /** Keeps a trainer's evaluation of a pass. */
  public void reportEvaluation(String trainer, int pass, double loss, double accuracy, double auc) {
    mutate(
        q -> {
          q.reportEvaluation(trainer, pass, loss, accuracy, auc);
          return null;
        });
  }

  /**
   * Stops the job: it ends as FAILED with {@code reason}, persisted like any change; trainers are
   * told at their next call and exit. False when the job had already ended.
   */
  public boolean stop(String reason) {
    boolean stopped = mutate(q -> q.stop(reason));
    if (stopped) {
      events.onEvent("job-stopped", "the job was stopped: " + reason);
    }
    return stopped;
  }

  /**
   * Takes back at once the tasks {@code trainer} holds, because it is gone ({@code why} says how
   * that is known); returns how many (0 when not serving or it holds none).
   */
  public int trainerGone(String trainer, String why) {
    Applied<Integer> a;
    synchronized (lock) {
      TaskQueue q = commits.tip();
      if (!serving || q == null || !q.holds(trainer)) {
        return 0;
      }
      a = apply(c -> c.releaseHolder(trainer, why));
    }
    commits.await(a.batch());
    int n = a.result();
    if (n > 0) {
      log.info("trainer '{}' {}: its {} task(s) went back to todo (or failed)", trainer, why, n);
      events.onEvent(
          "task-timeout", "trainer '" + trainer + "' " + why + ": " + n + " task(s) taken back");
    }
    return n;
  }

  /** Takes back the pending tasks past their deadline; returns how many (0 when not serving). */
  public int expireOverdue() {
    Applied<Integer> a;
    String[] lastFailure = {""};
    synchronized (lock) {
      TaskQueue q = commits.tip();
      if (!serving || q == null || !q.hasOverdue()) {
        return 0;
      }
      a =
          apply(
              c -> {
                int n = c.expireOverdue();
                lastFailure[0] = c.lastFailure;
                return n;
              });
    }
    commits.await(a.batch());
    int n = a.result();
    if (n > 0) {
      log.info(
          "{} task(s) timed out and went back to todo (or failed); last: {}", n, lastFailure[0]);
      events.onEvent("task-timeout", n + " task(s) timed out and went back to todo (or failed)");
    }
    return n;
  }

  /** The job's status. */
  public JobStatus status() {
    synchronized (lock) {
      requireServing();
      return statusLocked();
    }
  }

  /** The job's status if this master serves, else empty (for admin and health). */
  public Optional<JobStatus> statusIfServing() {
    synchronized (lock) {
      return serving ? Optional.of(statusLocked()) : Optional.empty();
    }
  }

  private JobStatus statusLocked() {
    TaskQueue queue = commits.tip();
    if (queue == null) {
      return JobStatus.newBuilder()
          .setState(JobState.WAITING_FOR_DATASET)
          .setTotalPasses(props.passes())
          .setTasks(TaskCounts.getDefaultInstance())
          .setMasterId(identity)
          .setAdminAddress(adminAddress.get())
          .build();
    }
    return queue.status().toBuilder()
        .setMasterId(identity)
        .setAdminAddress(adminAddress.get())
        .setDatasetRecords(dataset.records())
        .setDatasetTasks(dataset.tasks())
        .setDatasetChunks(dataset.chunks())
        .build();
  }

  private TaskQueue newQueue(Dataset d) {
    return new TaskQueue(d.taskRecords(), props.passes(), props.maxFailures(), clock);
  }

  /** Queue commits so far and the changes they held (for tests and metrics). */
  public long queueCommits() {
    synchronized (lock) {
      return commits.commits();
    }
  }

  public long queueChangesCommitted() {
    synchronized (lock) {
      return commits.changesCommitted();
    }
  }

  /**
   * Takes back at once the tasks of answers that failed while this master stopped serving, if the
   * state just loaded holds them (their save reached etcd though it was not confirmed): otherwise
   * each would wait for its timeout, the k-th of an answer k timeouts.
   */
  private void takeBackUnanswered() {
    List<UnansweredTasks.Entry> lost = unanswered.drain();
    Applied<Integer> a;
    synchronized (lock) {
      if (lost.isEmpty() || !serving || commits.tip() == null) {
        return;
      }
      a = apply(c -> UnansweredTasks.takeBack(c, lost));
    }
    commits.await(a.batch());
    if (a.result() > 0) {
      log.info(
          "{} task(s) handed out in answers that failed when this master stopped leading went"
              + " back to todo (their save had reached etcd)",
          a.result());
    }
  }

  /** What a change returned, and the commit its caller waits for before it answers. */
  private record Applied<T>(T result, QueueCommits.Batch batch) {}

  /** Makes a change and answers once it is saved (with the changes of concurrent calls). */
  private <T> T mutate(Function<TaskQueue, T> change) {
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
  private <T> Applied<T> apply(Function<TaskQueue, T> change) {
    requireServing();
    TaskQueue current = requireQueue();
    TaskQueue copy = current.copy();
    T result = change.apply(copy);
    if (copy.version() == current.version()) {
      return new Applied<>(result, commits.newest());
    }
    return new Applied<>(result, commits.changed(copy));
  }

  private long saveQueue(TaskQueue q) {
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
    stopServing();
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

  private TaskQueue requireQueue() {
    TaskQueue queue = commits.tip();
    if (queue == null) {
      throw new ServiceException(
          ErrorReason.NO_DATASET, "no dataset is set: call SetDataset first");
    }
    return queue;
  }

  private void requireServing() {
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
