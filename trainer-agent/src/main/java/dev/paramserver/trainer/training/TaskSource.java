package dev.paramserver.trainer.training;

import dev.paramserver.models.Dataset;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.recordio.ChunkInfo;
import dev.paramserver.storage.Storage;
import dev.paramserver.trainer.StopSignal;
import dev.paramserver.trainer.master.MasterReports;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Asks the master for tasks and reads their chunks. With prefetch on, the next task is asked for
 * and read on a background thread while the current one trains, so I/O overlaps compute.
 */
final class TaskSource implements AutoCloseable {
  /** The master's answer, and for a task its records (or why they could not be read). */
  record Fetched(GetTaskResponse response, List<Example> examples, Exception readError) {
    boolean isTask() {
      return response.getOutcome() == GetTaskResponse.Outcome.TASK;
    }

    Task task() {
      return response.getTask();
    }
  }

  private final MasterReports master;
  private final StopSignal stop;
  private final boolean prefetch;
  private final Storage storage;
  private final ExecutorService executor;
  private Future<Fetched> next;

  /**
   * @param storage reads the task's chunks: local files, or S3 objects with one ranged read each
   */
  TaskSource(MasterReports master, StopSignal stop, boolean prefetch, Storage storage) {
    this.master = master;
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

  private Fetched fetch(int pass) {
    GetTaskResponse resp = master.getTask(pass);
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
  }
}
