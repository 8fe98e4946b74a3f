package dev.paramserver.trainer.training;

import dev.paramserver.models.Batch;
import dev.paramserver.models.BatchRows;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Model;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.LossWindow;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.stop.StopSignal;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Trains one task's records: shuffle, mini-batches, forward/backward, push (every {@code
 * accumulate} batches, the mean of their gradients), pull. Keeps the progress numbers and logs
 * every {@code log-every} batches. Public for the benchmarks ({@code TrainerThreadBench}), which
 * run it apart from the network; the trainer's own door is {@code TrainingSession}.
 */
public final class TaskTrainer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(TaskTrainer.class);

  private final TrainingContext ctx;
  private final TrainingProgress progress;
  private final StopSignal stop;
  private final int batchSize;
  private final int accumulate;
  private final int logEvery;
  private final long seed;
  private final GradientSender sender;
  private final Parameters batchGrads;
  private final List<String> sparseTables;
  // the sparse rows kept between batches and pulled ahead, or null (rows pulled per batch)
  private final RowCache cache;
  private final RowPrefetch prefetch;
  // with the cache: the batch's rows by batch-local index, as the model reads them
  private final BatchRows batchRows;
  private Parameters grads;
  private long windowStart = System.nanoTime();
  private long windowSamples;
  private double windowLoss;
  private int windowBatches;

  public TaskTrainer(
      TrainingContext ctx, TrainerProperties props, TrainingProgress progress, StopSignal stop) {
    this.ctx = ctx;
    this.progress = progress;
    this.stop = stop;
    this.batchSize = props.data().batchSize();
    this.accumulate = props.optimizer().accumulate();
    this.logEvery = props.agent().logEvery();
    this.seed = props.agent().seed();
    Model model = ctx.model();
    this.grads = Parameters.zerosLike(model);
    this.batchGrads = accumulate > 1 ? Parameters.zerosLike(model) : null;
    this.sparseTables = List.copyOf(ctx.values().sparseNames());
    CommunicationProperties.SparseRowSettings rows = props.communication().sparse();
    boolean cached =
        !sparseTables.isEmpty()
            && rows.cache()
            && props.communication().pipelined()
            && ctx.client().streamsPushes();
    if (cached) {
      this.cache =
          new RowCache(ctx.client().layout().specs(), rows.staleness(), rows.cacheSize().toBytes());
      cache.install(ctx.values());
      long rowBytes = 0;
      for (String t : sparseTables) {
        rowBytes += 4L * ctx.values().sparse(t).width();
      }
      this.prefetch =
          new RowPrefetch(
              cache, ctx.client(), rows.staleness(), rows.prefetchSize().toBytes(), rowBytes);
      this.batchRows = cache.newBatchRows();
    } else {
      this.cache = null;
      this.prefetch = null;
      this.batchRows = null;
    }
    this.sender =
        new GradientSender(
            ctx.client(),
            model,
            ctx.values(),
            stop,
            props.communication().pipelined(),
            props.communication().pipelineLag(!sparseTables.isEmpty()),
            cache);
  }

  /**
   * A task trained: its record count, its training loss in windows, and a future that completes
   * once all of its gradients were pushed and acknowledged (with pipelining, after {@link #train}
   * returned).
   */
  public record Trained(long records, List<LossWindow> loss, Future<?> applied) {}

  /**
   * Trains the examples of a task. With pipelining, its last pushes may still be in flight when
   * this returns: see {@link Trained#applied()}.
   *
   * @param lossEveryRecords the master's run tracking asks for the loss in windows of at least this
   *     many records (0: none)
   * @return the number of records trained
   * @throws StoppedException when a stop was requested (after a whole batch, whose gradient is
   *     sent)
   */
  public Trained train(Task task, List<Example> examples, long lossEveryRecords) {
    LossWindows loss = new LossWindows(lossEveryRecords);
    Collections.shuffle(examples, new Random(seed ^ (task.getId() * 31 + task.getEpoch())));
    List<Batch> batches = new Dataset(examples, ctx.spec().features()).batches(batchSize);
    Parameters values = ctx.values();
    long records = 0;
    int pending = 0;
    grads.clear();
    for (int i = 0; i < batches.size(); i++) {
      Batch batch = batches.get(i);
      ctx.prepare(batch);
      if (prefetch != null) {
        prefetch.ready(batches, i, values);
        cache.resolve(batch.sparseIds(), batchRows);
      } else if (!sparseTables.isEmpty()) {
        // each batch's rows go into tables of its own: a push in flight may re-initialise a
        // pserver from the previous batch's (see GradientSender), so those are never cleared
        for (String t : sparseTables) {
          values.putSparse(t, new Parameters.SparseTable(values.sparse(t).width()));
        }
        ctx.client().pullRows(values, batch.sparseIds());
      }
      Model.StepResult r;
      if (batchGrads != null) {
        batchGrads.clear();
        r = step(values, batch, batchGrads);
        Gradients.add(grads, batchGrads);
      } else {
        r = step(values, batch, grads);
      }
      if (batchRows != null) {
        cache.accumulate(batchRows);
      }
      pending++;
      if (pending == accumulate) {
        send(pending);
        pending = 0;
      }
      records += batch.size();
      note(task, batch.size(), r.loss());
      loss.add(batch.size(), r.loss(), System.currentTimeMillis());
      if (stop.isRequested()) {
        if (pending > 0) {
          send(pending);
        }
        sender.awaitInFlight();
        throw new StoppedException("training task " + task.getId());
      }
    }
    if (pending > 0) {
      send(pending);
    }
    // the task counts as trained only once all of its gradients were applied: the caller waits
    // for this before reporting it, while the next task trains
    return new Trained(records, loss.finish(), sender.flush());
  }

  /** Sends every gradient, waits for them to be acknowledged and takes the latest values in. */
  public void settle() {
    sender.awaitInFlight();
  }

  /** The model's step; with the cache, on the batch's rows by batch-local index. */
  private Model.StepResult step(Parameters values, Batch batch, Parameters into) {
    return batchRows != null
        ? ctx.model().trainStep(values, batch, batchRows, into)
        : ctx.model().trainStep(values, batch, into);
  }

  private void send(int batches) {
    if (batches > 1) {
      Gradients.scale(grads, 1f / batches);
      if (cache != null) {
        cache.scaleAccumulated(1f / batches);
      }
    }
    grads = sender.send(grads);
  }

  /** Stops the background thread of the pipeline. */
  @Override
  public void close() {
    sender.close();
  }

  /** The row cache's state for the progress line, or nothing without a cache. */
  private String cacheState() {
    if (cache == null) {
      return "";
    }
    return String.format(
        Locale.ROOT,
        "; row cache %d rows (%d MB, %d evicted), %d rows pulled ahead, %d waited for",
        cache.rows(),
        cache.bytes() >> 20,
        cache.evictions(),
        prefetch.rowsAhead(),
        prefetch.rowsWaited());
  }

  private void note(Task task, int size, double loss) {
    progress.batch(size, loss);
    windowSamples += size;
    windowLoss += loss;
    windowBatches++;
    if (windowBatches >= logEvery) {
      double secs = (System.nanoTime() - windowStart) / 1e9;
      progress.throughput(windowSamples / Math.max(secs, 1e-9));
      log.info(
          String.format(
              Locale.ROOT,
              "pass %d task %d: %d batches, %.0f samples/s, loss %.4f%s",
              task.getPass(),
              task.getId(),
              progress.batches(),
              progress.samplesPerSecond(),
              windowLoss / windowBatches,
              cacheState()));
      windowStart = System.nanoTime();
      windowSamples = 0;
      windowLoss = 0;
      windowBatches = 0;
    }
  }
}
