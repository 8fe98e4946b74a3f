package dev.paramserver.master.task;

import com.google.protobuf.Value;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.dataset.DatasetIndexer;
import dev.paramserver.master.dataset.IndexedDataset;
import dev.paramserver.master.state.JobStore;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.LossWindow;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.TaskCounts;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.IntSupplier;
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
 *
 * <p>The door of the {@code task} package for the gRPC service, the console and the election; its
 * parts: {@link ServedQueue} (serving, the state and its saves), {@link DatasetSetup} (SetDataset),
 * {@link TaskHandout} (GetTask), {@link TaskQueue} (the queues' rules).
 */
public final class MasterJob {
  private static final Logger log = LoggerFactory.getLogger(MasterJob.class);

  private final ServedQueue served;
  private final TaskTimeouts timeouts;
  private final DatasetSetup datasets;
  private final TaskHandout handout;
  private final UnansweredTasks unanswered = new UnansweredTasks();
  private final List<Runnable> servingListeners = new CopyOnWriteArrayList<>();
  private final int passes;
  private volatile Supplier<String> adminAddress = () -> "";
  private volatile JobEventListener events = (kind, message) -> {};
  private volatile long lossEveryRecords;
  private volatile Consumer<List<LossWindow>> lossListener = windows -> {};
  private volatile LongConsumer lossRebase = records -> {};
  private volatile IntSupplier registeredTrainers = () -> 0;

  public MasterJob(MasterProperties props, JobStore store, Clock clock) {
    this(props, store, clock, DatasetIndexer.localOnly());
  }

  /**
   * @param indexer reads the dataset's chunk headers (local files, or S3 objects by ranged reads)
   */
  public MasterJob(MasterProperties props, JobStore store, Clock clock, DatasetIndexer indexer) {
    this.served = new ServedQueue(props, store, clock);
    this.timeouts = new TaskTimeouts(props.taskTimeout(), props.adaptiveTimeout());
    this.datasets = new DatasetSetup(served, props, indexer);
    this.handout =
        new TaskHandout(
            served,
            props.waitRetry(),
            timeouts,
            unanswered,
            this::noteFinished,
            props.minTrainers(),
            () -> registeredTrainers.getAsInt());
    this.passes = props.passes();
  }

  /**
   * How many trainers are registered now (for {@code paramserver.master.min-trainers}); none are
   * counted until this is set.
   */
  public void countRegisteredTrainers(IntSupplier registered) {
    this.registeredTrainers = registered;
  }

  /** Where to find the leader's address for NOT_LEADER answers. */
  public void setLeaderAddress(Supplier<Optional<String>> leaderAddress) {
    served.setLeaderAddress(leaderAddress);
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
    synchronized (served.lock) {
      TaskQueue q = served.tip();
      return served.isServing() && q != null ? q.holders() : Set.of();
    }
  }

  /** Called (once per loss) when a fenced save was refused: the election steps down. */
  public void setOnFenceLost(Runnable onFenceLost) {
    served.setOnFenceLost(onFenceLost);
  }

  /**
   * Loads the dataset and snapshot from the store and starts serving as the leader. Pending tasks
   * keep the deadlines they were given (the timeout checker re-arms on them).
   *
   * @param identity this master's {@code host:grpcPort}
   */
  public void startServing(String identity) {
    synchronized (served.lock) {
      TaskQueue queue = served.load(identity);
      if (queue != null) {
        // before any report is taken: the loss's step goes on from what the job trained
        lossRebase.accept(
            queue.status().getPassesList().stream().mapToLong(PassStatus::getRecords).sum());
      }
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
    served.stop();
  }

  public boolean isServing() {
    return served.isServing();
  }

  public String identity() {
    return served.identity();
  }

  /** Bytes of the last snapshot saved (compressed), 0 before the first. */
  public long lastSnapshotBytes() {
    return served.lastSnapshotBytes();
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
    return datasets.setDataset(globs, trainer, hyperparameters);
  }

  /** The hyperparameters kept with the dataset (empty while none is set, or none were sent). */
  public Map<String, Value> hyperparameters() {
    synchronized (served.lock) {
      IndexedDataset dataset = served.dataset();
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
   * <p>With {@code maxTasks} above 1, up to that many tasks (at most {@value
   * TaskHandout#MAX_TASKS_PER_CALL}) go out in one answer, and one commit, within a fair share of
   * what remains ({@link TaskQueue#leaseShare}).
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
    return handout.getTask(trainer, pass, finished, holdMs, maxTasks, requestId, lossEveryRecords);
  }

  /** A trainer reports a task trained; false if the report was stale or a duplicate. */
  public boolean taskFinished(String trainer, long taskId, long epoch) {
    return taskFinished(trainer, new Finished(taskId, epoch));
  }

  /** A trainer reports a task trained; false if the report was stale or a duplicate. */
  public boolean taskFinished(String trainer, Finished f) {
    ReportOutcome r = served.mutate(q -> q.finished(f.taskId(), f.epoch()));
    noteFinished(trainer, f, r);
    return r.accepted();
  }

  private void noteFinished(String trainer, Finished f, ReportOutcome r) {
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
    ReportOutcome r = served.mutate(q -> q.failed(taskId, epoch, reason, handedBack));
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
    served.mutate(
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
    boolean stopped = served.mutate(q -> q.stop(reason));
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
    ServedQueue.Applied<Integer> a;
    synchronized (served.lock) {
      TaskQueue q = served.tip();
      if (!served.isServing() || q == null || !q.holds(trainer)) {
        return 0;
      }
      a = served.apply(c -> c.releaseHolder(trainer, why));
    }
    served.commits().await(a.batch());
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
    ServedQueue.Applied<Integer> a;
    String[] lastFailure = {""};
    synchronized (served.lock) {
      TaskQueue q = served.tip();
      if (!served.isServing() || q == null || !q.hasOverdue()) {
        return 0;
      }
      a =
          served.apply(
              c -> {
                int n = c.expireOverdue();
                lastFailure[0] = c.lastFailure;
                return n;
              });
    }
    served.commits().await(a.batch());
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
    synchronized (served.lock) {
      served.requireServing();
      return statusLocked();
    }
  }

  /** The job's status if this master serves, else empty (for admin and health). */
  public Optional<JobStatus> statusIfServing() {
    synchronized (served.lock) {
      return served.isServing() ? Optional.of(statusLocked()) : Optional.empty();
    }
  }

  private JobStatus statusLocked() {
    TaskQueue queue = served.tip();
    if (queue == null) {
      return JobStatus.newBuilder()
          .setState(JobState.WAITING_FOR_DATASET)
          .setTotalPasses(passes)
          .setTasks(TaskCounts.getDefaultInstance())
          .setMasterId(served.identity())
          .setAdminAddress(adminAddress.get())
          .build();
    }
    IndexedDataset dataset = served.dataset();
    return queue.status().toBuilder()
        .setMasterId(served.identity())
        .setAdminAddress(adminAddress.get())
        .setDatasetRecords(dataset.records())
        .setDatasetTasks(dataset.tasks())
        .setDatasetChunks(dataset.chunks())
        .build();
  }

  /** Queue commits so far and the changes they held (for tests and metrics). */
  public long queueCommits() {
    synchronized (served.lock) {
      return served.commits().commits();
    }
  }

  public long queueChangesCommitted() {
    synchronized (served.lock) {
      return served.commits().changesCommitted();
    }
  }

  /**
   * Takes back at once the tasks of answers that failed while this master stopped serving, if the
   * state just loaded holds them (their save reached etcd though it was not confirmed): otherwise
   * each would wait for its timeout, the k-th of an answer k timeouts.
   */
  private void takeBackUnanswered() {
    List<UnansweredTasks.Entry> lost = unanswered.drain();
    ServedQueue.Applied<Integer> a;
    synchronized (served.lock) {
      if (lost.isEmpty() || !served.isServing() || served.tip() == null) {
        return;
      }
      a = served.apply(c -> UnansweredTasks.takeBack(c, lost));
    }
    served.commits().await(a.batch());
    if (a.result() > 0) {
      log.info(
          "{} task(s) handed out in answers that failed when this master stopped leading went"
              + " back to todo (their save had reached etcd)",
          a.result());
    }
  }
}
