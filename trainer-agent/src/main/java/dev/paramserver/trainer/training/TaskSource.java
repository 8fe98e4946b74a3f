package dev.paramserver.trainer.training;

import dev.paramserver.models.Dataset;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.LossWindow;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.storage.Storage;
import dev.paramserver.trainer.master.MasterReports;
import dev.paramserver.trainer.stop.StopSignal;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks the master for tasks, reads their chunks and reports them trained. With prefetch on, the
 * next task is asked for and read on a background thread while the current one trains, so I/O and
 * the master's commit overlap compute, and the tasks trained meanwhile are reported in that same
 * GetTask.
 */
final class TaskSource implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(TaskSource.class);

  /** The master's answer, and for a task its records (or why they could not be read). */
  record Fetched(GetTaskResponse response, List<Example> examples, Exception readError) {
    boolean isTask() {
      return response.getOutcome() == GetTaskResponse.Outcome.TASK;
    }

    Task task() {
      return response.getTask();
    }
  }

  /** A task trained, to report once its pushes are acknowledged. */
  private record Trained(Task task, long records, List<LossWindow> loss, Future<?> applied) {}

  private final MasterReports master;
  private final Queue<Trained> unreported = new ConcurrentLinkedQueue<>();
  private final StopSignal stop;
  private final boolean prefetch;
  private final int holdMs;
  private final int maxTasks;
  // Tasks handed out with an earlier answer (more_tasks), not yet started, with that answer.
  private final Deque<GetTaskResponse> leased = new ConcurrentLinkedDeque<>();
  private final Storage storage;
  private final ExecutorService executor;
  private Future<Fetched> next;

  /**
   * @param storage reads the task's chunks: local files, or S3 objects with one ranged read each
   * @param holdMs how long the master may hold a WAIT answer for a change (0 in synchronous mode,
   *     where an idle trainer must keep taking part in each step)
   * @param maxTasks the most tasks to take per GetTask (the extra ones are trained before the
   *     master is asked again)
   */
  TaskSource(
      MasterReports master,
      StopSignal stop,
      boolean prefetch,
      Storage storage,
      int holdMs,
      int maxTasks) {
    this.master = master;
    this.holdMs = holdMs;
    this.maxTasks = maxTasks;
    this.storage = storage;
    this.stop = stop;
    this.prefetch = prefetch;
    this.executor =
        prefetch
            ? Executors.newSingleThreadExecutor(
                r -> {
                  Thread t = new Thread(r, "task-prefetch");
                  t.setDaemon(true);
                  return t;
                })
            : null;
  }

  /** The next task (or outcome) for {@code pass}: the prefetched one if there is one. */
  Fetched next(int pass) {
    if (next != null) {
      Future<Fetched> f = next;
      next = null;
      return stop.await(f, "waiting for the prefetched task");
    }
    return fetch(pass);
  }

  /** Starts fetching the task after the current one (no-op when prefetch is off). */
  void prefetch(int pass) {
    if (prefetch && next == null) {
      next = executor.submit(() -> fetch(pass));
    }
  }

  /**
   * Reports {@code task} trained once {@code applied} completes (its gradients acknowledged). With
   * prefetch on, the report rides on this trainer's next GetTask (the master records it before it
   * hands out the next task, in one commit), so the training thread waits neither for the last
   * pushes nor for the master; without, it is sent now.
   */
  void finished(Task task, long records, List<LossWindow> loss, Future<?> applied) {
    if (!prefetch) {
      stop.await(applied, "waiting for the task's pushes");
      master.finished(task, records, loss);
      return;
    }
    unreported.add(new Trained(task, records, loss, applied));
  }

  /** True when tasks reported {@link #finished} still wait for the next GetTask to carry them. */
  boolean hasUnreported() {
    return !unreported.isEmpty();
  }

  /** A prefetched task not yet handed out, if any (to hand back when stopping). */
  Fetched takePrefetched() {
    if (next == null) {
      return null;
    }
    try {
      return next.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } catch (ExecutionException e) {
      return null;
    } finally {
      next = null;
    }
  }

  /** Tasks handed out with an earlier answer and not started (to hand back when stopping). */
  List<Task> takeLeased() {
    List<Task> out = new ArrayList<>();
    for (GetTaskResponse r = leased.poll(); r != null; r = leased.poll()) {
      out.add(r.getTask());
    }
    return out;
  }

  private Fetched fetch(int pass) {
    GetTaskResponse local = leased.poll();
    if (local != null) {
      return read(local);
    }
    List<TaskFinishedRequest> reports = new ArrayList<>();
    for (Trained t = unreported.poll(); t != null; t = unreported.poll()) {
      try {
        stop.await(t.applied(), "waiting for the task's pushes");
        reports.add(master.finishedReport(t.task(), t.records(), t.loss()));
      } catch (StoppedException e) {
        throw e;
      } catch (RuntimeException e) {
        log.warn("task {} is not reported finished: {}", t.task().getId(), e.getMessage());
      }
    }
    GetTaskResponse resp = master.getTask(pass, reports, holdMs, maxTasks);
    for (Task more : resp.getMoreTasksList()) {
      leased.add(resp.toBuilder().setTask(more).clearMoreTasks().build());
    }
    return read(resp.getMoreTasksCount() == 0 ? resp : resp.toBuilder().clearMoreTasks().build());
  }

  private Fetched read(GetTaskResponse resp) {
    if (resp.getOutcome() != GetTaskResponse.Outcome.TASK) {
      return new Fetched(resp, List.of(), null);
    }
    try {
      return new Fetched(
          resp, Dataset.readChunks(chunks(resp.getTask()), storage::openRange), null);
    } catch (Exception e) {
      return new Fetched(resp, List.of(), e);
    }
  }

  static List<ChunkInfo> chunks(Task task) {
    List<ChunkInfo> out = new ArrayList<>();
    for (var c : task.getChunksList()) {
      out.add(new ChunkInfo(c.getPath(), c.getOffset(), c.getLength(), c.getRecords()));
    }
    return out;
  }

  @Override
  public void close() {
    if (executor != null) {
      executor.shutdownNow();
    }
    // a stopping trainer still reports the tasks it trained, with one attempt each (a report
    // that does not arrive only makes the master train the task again after its timeout)
    for (Trained t = unreported.poll(); t != null; t = unreported.poll()) {
      if (t.applied().isDone() && !t.applied().isCancelled()) {
        try {
          t.applied().get();
          master.finishedOnce(t.task(), t.records(), t.loss());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (ExecutionException e) {
          log.warn("task {} is not reported finished: its pushes failed", t.task().getId());
        }
      }
    }
  }
}
