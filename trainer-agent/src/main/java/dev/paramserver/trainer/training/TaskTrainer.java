package dev.paramserver.trainer.training;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Model;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.trainer.pserver.ParameterClient;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Trains one task's records: shuffle, mini-batches, forward/backward, push (every {@code
 * accumulate} batches, the mean of their gradients), pull. Keeps the progress numbers and logs
 * every {@code logEvery} batches.
 */
final class TaskTrainer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(TaskTrainer.class);

  private final Model model;
  private final int features;
  private final ParameterClient client;
  private final TrainingProgress progress;
  private final TrainerMetrics metrics;
  private final int batchSize;
  private final int accumulate;
  private final int logEvery;
  private final long seed;
  private final Parameters values;
  private Parameters grads;
  private final Parameters batchGrads;
  private final boolean pipeline;
  private Parameters spareGrads;
  private Parameters incoming;
  private java.util.concurrent.ExecutorService comm;
  private java.util.concurrent.Future<?> inFlight;
  private final boolean sparse;
  private long step;
  private long windowStart = System.nanoTime();
  private long windowSamples;
  private double windowLoss;
  private int windowBatches;

  TaskTrainer(
      Model model,
      int features,
      ParameterClient client,
      Parameters values,
      TrainingProgress progress,
      TrainerMetrics metrics,
      int batchSize,
      int accumulate,
      int logEvery,
      long seed,
      boolean pipeline) {
    this.model = model;
    this.features = features;
    this.client = client;
    this.values = values;
    this.progress = progress;
    this.metrics = metrics;
    this.batchSize = batchSize;
    this.accumulate = accumulate;
    this.logEvery = logEvery;
    this.seed = seed;
    this.grads = Parameters.zerosLike(model);
    this.batchGrads = accumulate > 1 ? Parameters.zerosLike(model) : grads;
    this.sparse = !values.sparseNames().isEmpty();
    this.pipeline = pipeline;
    if (pipeline) {
      spareGrads = Parameters.zerosLike(model);
      incoming = Parameters.zerosLike(model);
    }
  }

  /**
   * Trains the examples of a task.
   *
   * @return the number of records trained, or -1 if {@code stop} turned true (after a whole batch)
   */
  long train(Task task, List<Example> examples, BooleanSupplier stop) {
    Collections.shuffle(examples, new Random(seed ^ (task.getId() * 31 + task.getEpoch())));
    List<Batch> batches = new Dataset(examples, features).batches(batchSize);
    long records = 0;
    int pending = 0;
    grads.clear();
    for (Batch batch : batches) {
      if (accumulate > 1) {
        batchGrads.clear();
      }
      if (sparse) {
        for (String t : values.sparseNames()) {
          values.sparse(t).rows().clear();
        }
        client.pullRows(values, batch.sparseIds());
      }
      Model.StepResult r = model.trainStep(values, batch, accumulate > 1 ? batchGrads : grads);
      if (accumulate > 1) {
        add(grads, batchGrads);
      }
      pending++;
      if (pending == accumulate) {
        push(pending);
        pending = 0;
      }
      records += batch.size();
      note(task, batch.size(), r.loss());
      if (stop.getAsBoolean()) {
        if (pending > 0) {
          push(pending);
        }
        awaitInFlight();
        return -1;
      }
    }
    if (pending > 0) {
      push(pending);
    }
    // the task counts as trained only once all of its gradients were applied
    awaitInFlight();
    return records;
  }

  /**
   * Sends the (mean) gradient. Without pipelining: push, then pull fresh values, then go on. With
   * pipelining (asynchronous mode), the push and the pull run on a background thread while the next
   * batch is computed on the values as they are; the pulled values are taken in before the next
   * push, so the model is at most one push behind, as it may be in asynchronous SGD anyway.
   */
  private void push(int batches) {
    if (batches > 1) {
      scale(grads, 1f / batches);
    }
    if (!pipeline) {
      client.push(grads, ++step, values);
      client.pull(values);
      grads.clear();
      return;
    }
    awaitInFlight();
    Parameters sending = grads;
    grads = spareGrads;
    spareGrads = sending;
    long s = ++step;
    if (comm == null) {
      comm =
          java.util.concurrent.Executors.newSingleThreadExecutor(
              r -> {
                Thread t = new Thread(r, "push-pull");
                t.setDaemon(true);
                return t;
              });
    }
    inFlight =
        comm.submit(
            () -> {
              client.push(sending, s, values);
              client.pull(incoming);
            });
    grads.clear();
  }

  /** Waits for the push and pull in flight, then takes the pulled values in. */
  private void awaitInFlight() {
    if (inFlight == null) {
      return;
    }
    try {
      inFlight.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new dev.paramserver.trainer.TrainerStoppedException("waiting for a push");
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(e.getCause());
    } finally {
      inFlight = null;
    }
    for (String name : values.denseNames()) {
      float[] src = incoming.dense(name);
      System.arraycopy(src, 0, values.dense(name), 0, src.length);
    }
  }

  /** Stops the background thread of the pipeline. */
  @Override
  public void close() {
    if (comm != null) {
      comm.shutdownNow();
    }
  }

  private static void add(Parameters into, Parameters from) {
    for (String name : into.denseNames()) {
      float[] a = into.dense(name);
      float[] b = from.dense(name);
      for (int i = 0; i < a.length; i++) {
        a[i] += b[i];
      }
    }
    for (String t : into.sparseNames()) {
      Parameters.SparseTable to = into.sparse(t);
      for (var row : from.sparse(t).rows().entrySet()) {
        float[] a = to.row(row.getKey());
        float[] b = row.getValue();
        for (int i = 0; i < a.length; i++) {
          a[i] += b[i];
        }
      }
    }
  }

  private static void scale(Parameters p, float f) {
    for (String name : p.denseNames()) {
      scale(p.dense(name), f);
    }
    for (String t : p.sparseNames()) {
      for (float[] row : p.sparse(t).rows().values()) {
        scale(row, f);
      }
    }
  }

  private static void scale(float[] a, float f) {
    for (int i = 0; i < a.length; i++) {
      a[i] *= f;
    }
  }

  private void note(Task task, int size, double loss) {
    progress.batches++;
    progress.samples += size;
    progress.lastLoss = loss;
    metrics.batch(size);
    windowSamples += size;
    windowLoss += loss;
    windowBatches++;
    if (windowBatches >= logEvery) {
      double secs = (System.nanoTime() - windowStart) / 1e9;
      progress.samplesPerSecond = windowSamples / Math.max(secs, 1e-9);
      log.info(
          String.format(
              Locale.ROOT,
              "pass %d task %d: %d batches, %.0f samples/s, loss %.4f",
              task.getPass(),
              task.getId(),
              progress.batches,
              progress.samplesPerSecond,
              windowLoss / windowBatches));
      windowStart = System.nanoTime();
      windowSamples = 0;
      windowLoss = 0;
      windowBatches = 0;
    }
  }
}
