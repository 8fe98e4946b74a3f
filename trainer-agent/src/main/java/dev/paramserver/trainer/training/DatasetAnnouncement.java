package dev.paramserver.trainer.training;

import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.rpc.StoppedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/**
 * The job's dataset told to the master (SetDataset) on a thread of its own, started before the
 * trainer joins and initialises its pservers: finding the master, its connection and the indexing
 * of the files are then no longer on the way to the first task. A failure (a refused dataset, a
 * stop) is thrown where the answer is awaited.
 */
final class DatasetAnnouncement implements AutoCloseable {
  private final CompletableFuture<SetDatasetResponse> answer = new CompletableFuture<>();
  private final Thread thread;

  private DatasetAnnouncement(Supplier<SetDatasetResponse> call) {
    thread =
        new Thread(
            () -> {
              try {
                answer.complete(call.get());
              } catch (RuntimeException | Error e) {
                answer.completeExceptionally(e);
              }
            },
            "set-dataset");
    thread.setDaemon(true);
  }

  /** Starts {@code call} now, on a thread of its own. */
  static DatasetAnnouncement start(Supplier<SetDatasetResponse> call) {
    DatasetAnnouncement a = new DatasetAnnouncement(call);
    a.thread.start();
    return a;
  }

  /**
   * The master's answer, once it came.
   *
   * @throws RuntimeException what the call threw (a {@link StoppedException} when the trainer
   *     stopped meanwhile)
   */
  SetDatasetResponse await() {
    try {
      return answer.get();
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException("SetDataset failed", cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoppedException("waiting for the master to take the dataset");
    }
  }

  /** Ends a call still retrying (its thread is interrupted: the retry loop gives up). */
  @Override
  public void close() {
    if (!answer.isDone()) {
      thread.interrupt();
    }
  }
}
