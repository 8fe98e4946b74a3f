package dev.paramserver.trainer.config;

import dev.paramserver.proto.v1.DataType;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * How the trainer talks to the master and the pservers ({@code paramserver.trainer.*}, the keys
 * below only).
 *
 * @param sync synchronous training: every step waits for all trainers (the same as mode=sync)
 * @param mode how the pservers combine the trainers' gradients: async, sync or bounded-staleness
 * @param staleness bounded-staleness: how many pushes a trainer may run ahead of the slowest live
 *     trainer (a push is one step's gradient to one pserver, per request of at most 2 MiB)
 * @param blockSize elements per parameter block (a block lives on one pserver)
 * @param gradientDtype element type of gradients on the wire: float32, float16 or bfloat16
 * @param pipeline asynchronous mode: push and pull in the background while the next batches are
 *     computed. The trainer reads its own writes: each batch's gradient is applied at once to its
 *     copy of the dense parameters by its own optimizer step (the pservers' step for plain SGD; for
 *     optimizers with state, such as momentum or Adam, the same rule on a local copy of the state,
 *     fed by this trainer's batches only), and each answer rebases the copy on the pservers' values
 * @param pipelineLag asynchronous pipelining: how many batches may be unacknowledged by the
 *     pservers (held, summed, while a push is in flight, or in flight) before the trainer waits for
 *     an answer. A push leaves as soon as the one before was answered, so other trainers' updates
 *     are usually one round trip old and at most this many batches. 0: every batch waits for its
 *     push. Default: 16 for dense models, 2 for models with sparse tables (held gradients make
 *     other trainers' updates of a row staler, and with optimizers with state the trainer's local
 *     step of a row, whose state it keeps only while the row is cached, drifts from the pservers':
 *     a capped Adagrad embedding lost about 1 point of AUC with 6, more with 16)
 * @param tasksPerRequest the most tasks taken from the master in one GetTask (it gives fewer near a
 *     pass's end): fewer calls and commits on the master for short tasks
 * @param rpcTimeout deadline of each call to the master or a pserver; for a streamed push
 *     (asynchronous mode, whose stream has no deadline), the longest wait for each request's answer
 *     before the stream is given up and its unanswered pushes are sent again
 * @param maxBackoff the longest wait between retries when the master or a pserver is unavailable
 * @param sparse how a trainer keeps, fetches ahead and refreshes the rows of sparse tables ({@code
 *     paramserver.trainer.sparse.*})
 */
@Validated
@ConfigurationProperties("paramserver.trainer")
public record CommunicationProperties(
    @DefaultValue("false") boolean sync,
    @DefaultValue("262144") @Min(1) int blockSize,
    @DefaultValue("float32") GradientDtype gradientDtype,
    @DefaultValue("true") boolean pipeline,
    @Min(0) Integer pipelineLag,
    @DefaultValue("4") @Min(1) int tasksPerRequest,
    @DefaultValue("10s") Duration rpcTimeout,
    @DefaultValue("10s") Duration maxBackoff,
    @DefaultValue("async") TrainingModeSetting mode,
    @DefaultValue("4") @Min(0) @Max(1_000_000) int staleness,
    @DefaultValue @Valid SparseRowSettings sparse) {

  /**
   * The trainer's row cache and prefetch for sparse tables. They apply in asynchronous mode with
   * pipelining (streamed pushes); the other modes pull a batch's rows before it, as with {@code
   * cache=false}.
   *
   * @param cache keep rows between batches: a batch pulls only the rows the trainer lacks or holds
   *     too stale, and those are pulled while the batch before computes; each push's answer brings
   *     its rows back, and the trainer's own updates are applied to its rows at once
   *     (read-my-writes)
   * @param staleness how many batches old a row may be: one read from its pserver during batch
   *     {@code b - staleness} or later may be used in batch {@code b} (0: every row is read for its
   *     batch, as without the cache; rows carried by an unanswered push are refreshed by its
   *     answer). Other trainers' updates reach a row at most this late
   * @param cacheSize the most memory the cached rows take (values, local optimizer state and about
   *     64 bytes of bookkeeping a row); the rows least recently used are evicted beyond it
   * @param prefetchSize how many bytes of rows may be pulled ahead of the batch that needs them (at
   *     least the next batch's, at most {@code staleness} batches ahead)
   */
  public record SparseRowSettings(
      @DefaultValue("true") boolean cache,
      @DefaultValue("4") @Min(0) @Max(1_000_000) int staleness,
      @DefaultValue("256MB") DataSize cacheSize,
      @DefaultValue("4MB") DataSize prefetchSize) {
    public SparseRowSettings {
      if (cacheSize.toBytes() <= 0) {
        throw new IllegalArgumentException(
            "paramserver.trainer.sparse.cache-size must be positive, got " + cacheSize);
      }
      if (prefetchSize.isNegative()) {
        throw new IllegalArgumentException(
            "paramserver.trainer.sparse.prefetch-size must not be negative, got " + prefetchSize);
      }
    }

    /** The settings when none are given. */
    public static SparseRowSettings defaults() {
      return new SparseRowSettings(true, 4, DataSize.ofMegabytes(256), DataSize.ofMegabytes(4));
    }
  }

  public CommunicationProperties {
    if (sync && mode == TrainingModeSetting.BOUNDED_STALENESS) {
      throw new IllegalArgumentException(
          "paramserver.trainer.sync=true contradicts paramserver.trainer.mode=bounded-staleness:"
              + " set only mode");
    }
    if (sync) {
      mode = TrainingModeSetting.SYNC;
    }
    sync = mode == TrainingModeSetting.SYNC;
    if (rpcTimeout.isNegative() || rpcTimeout.isZero()) {
      throw new IllegalArgumentException(
          "paramserver.trainer.rpc-timeout must be positive, got " + rpcTimeout);
    }
    if (maxBackoff.isNegative() || maxBackoff.isZero()) {
      throw new IllegalArgumentException(
          "paramserver.trainer.max-backoff must be positive, got " + maxBackoff);
    }
  }

  /** The wire type of gradients. */
  public DataType gradientWireType() {
    return gradientDtype.wireType();
  }

  /** The pipeline lag for a model with ({@code sparse}) or without sparse tables. */
  public int pipelineLag(boolean sparse) {
    return pipelineLag != null ? pipelineLag : sparse ? 2 : 16;
  }

  /** Asynchronous pipelining is on (it never applies to synchronous training). */
  public boolean pipelined() {
    return pipeline && !sync;
  }
}
