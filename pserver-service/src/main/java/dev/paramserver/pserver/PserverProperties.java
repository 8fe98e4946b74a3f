package dev.paramserver.pserver;

import dev.paramserver.pserver.wal.WriteAheadLog.SyncMode;
import dev.paramserver.storage.Location;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * Settings of a parameter server ({@code paramserver.pserver.*}).
 *
 * @param desired number of pservers of the job; written to etcd key {@code ps_desired} if that key
 *     is absent (a value already there wins), and the range {@code [0, desired)} of indexes claimed
 * @param checkpointDir where checkpoint files go: a local directory (created if missing) or an
 *     {@code s3://bucket/prefix} URI of an S3-compatible store (see {@code
 *     paramserver.pserver.s3}); with an S3 URI the write-ahead log needs its own local {@code
 *     wal.dir}
 * @param checkpointInterval time between checkpoints while serving; 0 disables the timer (a
 *     checkpoint is still written on graceful shutdown)
 * @param rejectNonFinite reject gradients holding NaN or Inf with NON_FINITE_GRADIENT; when false
 *     they are applied as they are
 * @param syncTimeout synchronous modes: the longest a push or pull waits for its step to complete
 *     before failing with SYNC_ABORTED (a dead trainer is dropped sooner, after its lease TTL)
 * @param registerTimeout how long one attempt to claim an index waits for a free one (an old
 *     holder's lease expiring) before trying again
 * @param blockingThreads threads that run calls which may wait (synchronous barriers, {@code
 *     wal.sync=always}, a replicated push whose backup is not in sync or late), so they never block
 *     gRPC's threads; a replicated push with a backup in sync holds none (it is answered from the
 *     backup's acknowledgement)
 * @param index the index ({@code ps/<index>}) this pserver tries to claim first, for example a
 *     StatefulSet pod's ordinal, so that a restarted pod gets its own shard and checkpoints back;
 *     when it is taken (or outside {@code [0, desired)}) the lowest free index is claimed instead,
 *     except an index that still owns slots or blocks in the committed placement (a shrink moves
 *     them away): that one is claimed back, waiting while it is held. -1 (the default) claims the
 *     lowest free index. After a lost lease the pserver always tries the index it held first.
 * @param sparse caps, eviction and admission of the sparse (embedding) tables
 * @param wal the write-ahead log of pushes, which makes every acknowledged push survive a crash
 * @param checkpointConsistency {@code independent}: each shard checkpoints on its own timer, at
 *     whatever step it is; {@code job} (synchronous mode): in addition, at each checkpoint tick of
 *     pserver 0 all shards cut a checkpoint at the same step, recorded under one job-wide id in
 *     etcd ({@code checkpoints/job/<id>}), and pservers that start when the job is not running (no
 *     trainer or other pserver registered since before that checkpoint: a restart of the job) load
 *     the newest complete job-wide checkpoint instead of their own newest one. Set it on every
 *     pserver of the job
 * @param replicas copies of each shard: 1 (no replica) or 2 (a primary and a backup that holds
 *     every acknowledged update and takes over when the primary's registration ends, even if its
 *     disk is gone). With 2, run twice {@code desired} pservers: the first to register for an index
 *     are primaries, the others backups
 * @param replicationTimeout the longest a primary waits for its backup to acknowledge an update (or
 *     to load the copy of the shard) before it answers without it, and drops the backup until it
 *     registers again
 * @param advertisePort the port published in {@code ps/<i>} (or {@code ps_backup/<i>}) for trainers
 *     and the shard's primary to dial, when they reach this pserver through a proxy or a port
 *     mapping; 0 (default) publishes the gRPC server's own port
 * @param zeroCopy parse the tensor-carrying requests (PushGradients, StreamPushes, InitParameters)
 *     as views of the buffers gRPC received them in, instead of copying their bytes (default true);
 *     false uses gRPC's stock protobuf parser. Metrics {@code paramserver.pserver.zero.copy.parses}
 *     and {@code paramserver.pserver.zero.copy.fallbacks} count the two
 * @param moveTimeout elastic placement (docs/explanation/elastic.md): how long the old owner of
 *     moving slots waits, after the new owner holds them, for the coordinator to commit the move
 *     (or roll it back) before it rolls the move back itself (a fenced delete of {@code
 *     placement_move}) and serves the slots again: a coordinator that died mid-move must not leave
 *     the slots refused for ever
 * @param limits the admission limits that bound the memory a pserver spends on calls
 */
@Validated
@ConfigurationProperties("paramserver.pserver")
public record PserverProperties(
    @DefaultValue("1") @Min(1) @Max(4096) int desired,
    @DefaultValue("./checkpoints") @NotNull String checkpointDir,
    @DefaultValue("60s") @NotNull Duration checkpointInterval,
    @DefaultValue("true") boolean rejectNonFinite,
    @DefaultValue("60s") @NotNull Duration syncTimeout,
    @DefaultValue("30s") @NotNull Duration registerTimeout,
    @DefaultValue("64") @Min(1) @Max(4096) int blockingThreads,
    @DefaultValue("-1") @Min(-1) @Max(4095) int index,
    @DefaultValue @Valid @NotNull Sparse sparse,
    @DefaultValue @Valid @NotNull Wal wal,
    @DefaultValue("independent") @NotNull CheckpointConsistency checkpointConsistency,
    @DefaultValue("1") @Min(1) @Max(2) int replicas,
    @DefaultValue("10s") @NotNull Duration replicationTimeout,
    @DefaultValue("0") @Min(0) @Max(65535) int advertisePort,
    @DefaultValue("true") boolean zeroCopy,
    @DefaultValue("10s") @NotNull Duration moveTimeout,
    @DefaultValue @Valid @NotNull Limits limits) {

  /** Whether the shards' checkpoints are cut independently or at one job-wide step. */
  public enum CheckpointConsistency {
    INDEPENDENT,
    JOB
  }

  public PserverProperties {
    if (checkpointDir != null) {
      try {
        Location.parse(checkpointDir);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "paramserver.pserver.checkpoint-dir: " + e.getMessage(), e);
      }
      if (Location.isS3(checkpointDir) && wal != null && wal.enabled() && wal.dir() == null) {
        throw new IllegalArgumentException(
            "paramserver.pserver.wal.dir must name a local directory when"
                + " paramserver.pserver.checkpoint-dir is an s3:// URI ("
                + checkpointDir
                + "): the write-ahead log stays on local disk");
      }
    }
  }

  /** The checkpoint directory when it is local (the default directory of the log). */
  public Path localCheckpointDir() {
    return Path.of(checkpointDir);
  }

  /**
   * The write-ahead log ({@code paramserver.pserver.wal.*}). Every push is appended to it before it
   * is answered; a checkpoint truncates it; a restart loads the newest checkpoint and replays the
   * log. Together with idempotent pushes (trainers retry a failed push with the same step) an
   * acknowledged push is applied exactly once, whatever crashes.
   *
   * @param enabled keep the log; without it a crash loses the pushes since the last checkpoint
   * @param sync when the log reaches the disk: {@code none} (written to the operating system before
   *     each answer: survives a crash of the pserver process, for example {@code kill -9}, but a
   *     crash of the machine loses what the OS had not written yet), {@code batch} (as none, plus
   *     an fsync every {@code batch-interval} in the background: a machine crash loses at most that
   *     interval of acknowledged pushes) or {@code always} (an fsync before each answer, shared by
   *     concurrent pushes: survives a machine crash, as long as its disk survives)
   * @param batchInterval {@code batch}: time between two background fsyncs
   * @param dir directory of the log segments, always on local disk; empty for {@code
   *     checkpoint-dir} (required when that is an {@code s3://} URI)
   */
  public record Wal(
      @DefaultValue("true") boolean enabled,
      @DefaultValue("batch") @NotNull SyncMode sync,
      @DefaultValue("50ms") @NotNull Duration batchInterval,
      Path dir) {

    /** The defaults: enabled, batch sync every 50 ms, in the checkpoint directory. */
    public static Wal defaults() {
      return new Wal(true, SyncMode.BATCH, Duration.ofMillis(50), null);
    }
  }

  /**
   * Sparse tables ({@code paramserver.pserver.sparse.*}). Without caps every pushed id keeps a row
   * for ever; with one, a full table evicts a row before it adds one.
   *
   * @param maxRows row cap of every sparse table without its own entry in {@code tables}; 0 for no
   *     cap
   * @param maxBytes cap on the bytes of all sparse tables of this pserver together (values,
   *     optimizer state, id, counters and index share of each row); 0 for no cap
   * @param tables per-table caps by table name, replacing {@code max-rows} for that table
   * @param eviction which rows a full table drops: {@code lfu} (least frequently updated, counts
   *     halving every {@code lfu-half-life}; for long-lived popular ids) or {@code ttl} (least
   *     recently updated, and rows not updated for {@code ttl} expire even below the cap; for ids
   *     with a life time such as sessions or campaigns)
   * @param lfuHalfLife {@code lfu}: how long it takes an unused row's count to halve
   * @param ttl {@code ttl}: rows not updated for this long are dropped (at least 1s)
   * @param evictionSample rows sampled to choose each one evicted (more is closer to exact LFU or
   *     LRU, and slower). Default 16: a Zipf click log capped at a quarter of its ids lost 2.4
   *     points of AUC with 8 and 0.9 with 16 (32: 0.7)
   * @param admissionThreshold pushes an id needs before it gets a row; the earlier pushes of it are
   *     dropped and pulls of it return the row's initial values (zeros unless the table has an
   *     init_stddev). 1 admits every id at its first push
   * @param admissionSketchWidth counters per hash row of each table's count-min sketch (4 rows of
   *     one byte each): about 10x the distinct ids seen between two halvings keeps false admissions
   *     rare
   */
  public record Sparse(
      @DefaultValue("0") @Min(0) long maxRows,
      @DefaultValue("0B") @NotNull DataSize maxBytes,
      @DefaultValue Map<String, @Valid TableCap> tables,
      @DefaultValue("lfu") @NotNull Eviction eviction,
      @DefaultValue("10m") @NotNull Duration lfuHalfLife,
      @DefaultValue("24h") @NotNull Duration ttl,
      @DefaultValue("16") @Min(1) @Max(64) int evictionSample,
      @DefaultValue("1") @Min(1) @Max(255) int admissionThreshold,
      @DefaultValue("1048576") @Min(16) @Max(268435456) int admissionSketchWidth) {

    /** Eviction policies. */
    public enum Eviction {
      LFU,
      TTL
    }

    /**
     * The cap of one table ({@code paramserver.pserver.sparse.tables.<name>.*}).
     *
     * @param maxRows rows at most; 0 for no row cap
     * @param maxBytes bytes at most (converted to rows by the table's row size); 0 for none
     */
    public record TableCap(
        @DefaultValue("0") @Min(0) long maxRows, @DefaultValue("0B") @NotNull DataSize maxBytes) {}
  }

  /**
   * Admission limits ({@code paramserver.pserver.limits.*}): calls past them are refused before
   * anything is done, with RESOURCE_EXHAUSTED (reason OVERLOADED) and a retry hint, and counted in
   * {@code paramserver_pserver_refused_total{reason}}; trainers and the Python client retry them.
   * The defaults follow the heap ({@code -Xmx}) and never refuse a normal job.
   *
   * @param maxCalls unary calls in flight at once (pushes, pulls, their waits); 0 (default) for the
   *     larger of 1024 and one per MiB of the heap, far above what a job's trainers keep in flight
   * @param maxQueuedBytes bytes of requests received (or being received) and not yet answered, over
   *     all calls and streams, counted as they are really received (a unary call from its request's
   *     first bytes; a lone call is always taken); 0B (default) for a quarter of the heap
   * @param blockingQueue calls that may wait (synchronous barriers, {@code wal.sync=always}) queued
   *     for a thread of {@code blocking-threads}
   * @param retryAfter the retry hint sent with a refusal
   * @param appliedWindow applied-push records (the identities that make a resent push a duplicate)
   *     are kept per trainer identity for this long after its last push; a push resent later is
   *     refused (PUSH_WINDOW_EXCEEDED), never applied twice. At least twice the clients' retry time
   * @param appliedIdentities trainer identities (trainer, session and origin) whose applied pushes
   *     are kept; past it the identity idle longest is dropped first, with the same effect
   */
  public record Limits(
      @DefaultValue("0") @Min(0) @Max(1048576) int maxCalls,
      @DefaultValue("0B") @NotNull DataSize maxQueuedBytes,
      @DefaultValue("1024") @Min(1) @Max(1048576) int blockingQueue,
      @DefaultValue("200ms") @NotNull Duration retryAfter,
      @DefaultValue("1h") @NotNull Duration appliedWindow,
      @DefaultValue("100000") @Min(1) int appliedIdentities) {

    /** The calls limit in force: the property, or the default that follows the heap. */
    public int effectiveMaxCalls(long maxHeap) {
      return maxCalls > 0 ? maxCalls : (int) Math.max(1024, Math.min(1 << 20, maxHeap >> 20));
    }

    /** The byte limit in force: the property, or a quarter of the heap. */
    public long effectiveMaxQueuedBytes(long maxHeap) {
      long bytes = maxQueuedBytes.toBytes();
      return bytes > 0 ? bytes : Math.max(1, maxHeap / 4);
    }
  }
}
