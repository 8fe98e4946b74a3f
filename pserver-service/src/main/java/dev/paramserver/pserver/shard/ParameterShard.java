package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.rpc.ServiceException;
import dev.paramserver.tensor.TensorCodec;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The parameters this pserver holds: dense float32 blocks and sparse tables with their optimizer
 * state. Thread-safe: definitions change under a write lock; pushes and pulls share a read lock and
 * lock each block (or sparse row) while they touch it, so concurrent pushes never lose an update.
 * With a write-ahead log or a backup, pushes are logged and applied one at a time, in the log's
 * order, which is the order a restart and the backup apply them in.
 *
 * <p>Before {@link #finishInit} every push and pull fails with NOT_INITIALIZED.
 */
public final class ParameterShard {
  private static final Logger log = LoggerFactory.getLogger(ParameterShard.class);
  private static final Comparator<DenseBlock> BLOCK_ORDER =
      Comparator.comparing(DenseBlock::name).thenComparingInt(b -> b.block);

  private final boolean rejectNonFinite;
  private final SparseSettings sparseSettings;
  private final ReentrantReadWriteLock structure = new ReentrantReadWriteLock();
  // Guarded by structure (written under the write lock, read under either).
  private final Map<String, Parameter> parameters = new HashMap<>();
  private final Map<String, DenseBlock> blocks = new HashMap<>();
  private final Map<String, SparseTable> tables = new HashMap<>();
  private String initId;
  private volatile TrainingMode mode = TrainingMode.ASYNC;
  private volatile int staleness;
  private volatile boolean initialised;
  // When the shard last became initialised (epoch ms), -1 while it is not.
  private volatile long initialisedAtMs = -1;

  private final AtomicLong step = new AtomicLong();
  private volatile boolean draining;
  private volatile String held;
  private volatile int index = -1;
  private volatile long checkpointStep;
  private volatile SyncAggregator sync;
  private volatile Consumer<String> tableListener = name -> {};
  private final AppliedSteps applied = new AppliedSteps();
  // Held while a logged push is logged, handed to the backup and applied (see logAndApply).
  private final Object order = new Object();
  private volatile PushLog pushLog = PushLog.NONE;
  private volatile Replica replica;
  private volatile int backupOf = -1;
  private volatile Replica statusRole;
  private volatile Runnable initListener = () -> {};
  private volatile java.util.function.LongConsumer syncStepListener = s -> {};

  /** Parts of one step a push may be cut into (the {@code part} field is below this). */
  static final int MAX_PARTS = 1 << 16;

  /**
   * The answer to a push.
   *
   * @param step the shard's update count after the push (for a duplicate: now)
   * @param duplicate the push had been applied before and changed nothing
   */
  public record PushOutcome(long step, boolean duplicate) {}

  /**
   * @param rejectNonFinite reject gradients holding NaN or Inf (NON_FINITE_GRADIENT)
   */
  public ParameterShard(boolean rejectNonFinite) {
    this(rejectNonFinite, SparseSettings.unlimited());
  }

  /**
   * @param rejectNonFinite reject gradients holding NaN or Inf (NON_FINITE_GRADIENT)
   * @param sparseSettings caps, eviction and admission of the sparse tables
   */
  public ParameterShard(boolean rejectNonFinite, SparseSettings sparseSettings) {
    this.rejectNonFinite = rejectNonFinite;
    this.sparseSettings = sparseSettings;
  }

  /** Defines parameters and stores initial blocks; see {@code ParameterServer.InitParameters}. */
  public int init(InitParametersRequest request) {
    checkNotHeld();
    structure.writeLock().lock();
    try {
      ShardInit.apply(this, request);
      return blocks.size();
    } finally {
      structure.writeLock().unlock();
    }
  }

  /**
   * Marks the shard initialised after checking the block count, then tells the init listener (which
   * checkpoints the fresh shard, so that its write-ahead log has a base to replay onto).
   */
  public void finishInit(FinishInitRequest request) {
    checkNotHeld();
    boolean fresh;
    structure.writeLock().lock();
    try {
      fresh = !initialised;
      ShardInit.finish(this, request);
    } finally {
      structure.writeLock().unlock();
    }
    if (fresh && initialised) {
      initListener.run();
    }
  }

  /**
   * Validates the whole push, then applies it (async mode) and returns the shard's update count. A
   * rejected push changes nothing.
   */
  public long push(PushGradientsRequest request) {
    return pushOutcome(request).step();
  }

  /**
   * Validates the whole push, then applies it once: a push identified by (trainer, session, step,
   * part) that was applied before is answered as a duplicate and changes nothing. The push is in
   * the write-ahead log before this returns. A rejected push changes nothing.
   */
  public PushOutcome pushOutcome(PushGradientsRequest request) {
    PushOutcome outcome = applyPush(request);
    settleReplica();
    return outcome;
  }

  private PushOutcome applyPush(PushGradientsRequest request) {
    structure.readLock().lock();
    ValidatedPush push;
    try {
      checkServing();
      if (request.getPart() >= MAX_PARTS) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            "push part " + request.getPart() + " is out of range: parts are 0.." + (MAX_PARTS - 1));
      }
      if (AppliedSteps.identified(request) && applied.applied(request)) {
        return new PushOutcome(step.get(), true);
      }
      push = ValidatedPush.of(request, parameters, blocks, tables, rejectNonFinite);
      if (mode == TrainingMode.ASYNC) {
        return outcome(applyOneLocked(push, true));
      }
    } finally {
      structure.readLock().unlock();
    }
    return outcome(requireSync().contribute(request.getTrainerId(), request.getStep(), push));
  }

  /** Waits until the backup (if any) holds every update applied so far; see {@link Replica}. */
  private void settleReplica() {
    Replica r = replica;
    if (r != null) {
      r.settle();
    }
  }

  private PushOutcome outcome(long stepOrDuplicate) {
    return stepOrDuplicate < 0
        ? new PushOutcome(step.get(), true)
        : new PushOutcome(stepOrDuplicate, false);
  }

  /** True if {@code request} is identified and was applied already. */
  boolean alreadyApplied(PushGradientsRequest request) {
    return request != null && AppliedSteps.identified(request) && applied.applied(request);
  }

  /**
   * Logs, applies and records one validated push under the shard's read lock (asynchronous and
   * bounded-staleness modes).
   *
   * @return the shard's update count after it, or -1 if it was a duplicate
   */
  long applyOne(ValidatedPush push) {
    structure.readLock().lock();
    try {
      return applyOneLocked(push, true);
    } finally {
      structure.readLock().unlock();
    }
  }

  private long applyOneLocked(ValidatedPush push, boolean log) {
    PushGradientsRequest request = push.request;
    if (!AppliedSteps.identified(request)) {
      return logAndApply(push, List.of(request), log);
    }
    AppliedSteps.Run run = applied.run(request);
    synchronized (run) {
      if (run.applied(request.getStep(), request.getPart())) {
        return -1;
      }
      long reached = logAndApply(push, List.of(request), log);
      run.record(request.getStep(), request.getPart());
      return reached;
    }
  }

  /**
   * Sums the gradients of several pushes per block (and sparse row), logs them as one record and
   * applies each sum once (a synchronous step).
   *
   * @return the shard's update count after the step
   */
  long applySummed(List<ValidatedPush> pushes) {
    structure.readLock().lock();
    try {
      return applySummedLocked(pushes, true);
    } finally {
      structure.readLock().unlock();
    }
  }

  private long applySummedLocked(List<ValidatedPush> pushes, boolean log) {
    ValidatedPush sum = pushes.size() == 1 ? pushes.get(0) : Gradients.sum(pushes);
    long reached = logAndApply(sum, pushes.stream().map(p -> p.request).toList(), log);
    pushes.forEach(p -> applied.record(p.request));
    return reached;
  }

  /**
   * Appends the requests to the log (first: a push that cannot be logged is not applied), hands the
   * record to the backup and applies it, all three in one order: a restart replays the log, and a
   * backup applies the records, in the log's order, so the shard applies them in that order too (an
   * optimizer with state, such as Adam, gives another result in another order). The log's fsync
   * ({@code wal.sync=always}) is waited for after that, outside the order, so that concurrent
   * pushes still share one fsync.
   */
  private long logAndApply(ValidatedPush push, List<PushGradientsRequest> requests, boolean log) {
    Replica r = replica;
    if (!log || (!pushLog.enabled() && r == null)) {
      Gradients.apply(push);
      return step.incrementAndGet();
    }
    WalRecord record = WalRecord.newBuilder().addAllPushes(requests).setInitId(initId).build();
    PushLog.Written written;
    long reached;
    synchronized (order) {
      try {
        written = pushLog.write(record);
      } catch (UncheckedIOException e) {
        throw logFailed(e);
      }
      if (r != null) {
        r.append(record);
      }
      Gradients.apply(push);
      reached = step.incrementAndGet();
    }
    try {
      written.awaitDurable();
    } catch (UncheckedIOException e) {
      // Applied but not durable: the push is not acknowledged, and nothing is served any more.
      throw logFailed(e);
    }
    return reached;
  }

  private ServiceException logFailed(UncheckedIOException e) {
    String why =
        "pserver "
            + index
            + " cannot write its write-ahead log ("
            + e.getMessage()
            + "): it serves nothing until restarted";
    holdCalls(why);
    ParameterShard.log.error(why, e);
    return new ServiceException(ErrorReason.SHUTTING_DOWN, why);
  }

  /**
   * Applies one record of the write-ahead log again (restart), without logging it: a push applied
   * already (by the checkpoint) is skipped.
   *
   * @return false when the record was skipped (duplicate, or of another initialisation)
   */
  public boolean replay(WalRecord record) {
    structure.readLock().lock();
    try {
      if (!initialised || !record.getInitId().equals(initId) || record.getPushesCount() == 0) {
        return false;
      }
      List<ValidatedPush> pushes = new ArrayList<>();
      for (PushGradientsRequest r : record.getPushesList()) {
        pushes.add(ValidatedPush.of(r, parameters, blocks, tables, false));
      }
      if (pushes.size() == 1) {
        return applyOneLocked(pushes.get(0), false) >= 0;
      }
      applySummedLocked(pushes, false);
      return true;
    } finally {
      structure.readLock().unlock();
    }
  }

  /** True when a push may wait (a synchronous mode, or a log that fsyncs before answering). */
  public boolean pushMayBlock() {
    return mode != TrainingMode.ASYNC || pushLog.blocks() || replica != null;
  }

  /**
   * Hands every record logged from now on to {@code replica} (this pserver is a primary with a
   * backup); null detaches it.
   */
  public void attachReplica(Replica replica) {
    this.replica = replica;
  }

  /**
   * Marks this pserver as the backup of shard {@code shard} (-1: none), for status; a backup holds
   * its calls and has no index of its own.
   */
  public void setBackupOf(int shard, Replica role) {
    this.backupOf = shard;
    this.replica = null;
    this.statusRole = role;
  }

  /**
   * Writes a copy of the whole shard (as a checkpoint file holds it) for a new backup, under the
   * write lock: no push is applied meanwhile, so the copy holds exactly the pushes logged before
   * {@code atCut} runs (still under the lock) and none after.
   *
   * @return false (and writes nothing) when the shard is not initialised
   */
  public boolean writeCopy(OutputStream out, Runnable atCut) throws IOException {
    structure.writeLock().lock();
    try {
      if (!initialised) {
        atCut.run();
        return false;
      }
      ShardSnapshots.write(this, out, 0);
      atCut.run();
      return true;
    } finally {
      structure.writeLock().unlock();
    }
  }

  /** Logs every push applied from now on to {@code log} before it is answered. */
  public void attachLog(PushLog log) {
    this.pushLog = log;
  }

  /**
   * Runs {@code listener} with the shard's update count right after each synchronous step was
   * applied, before the next step can be: the listener sees (and may {@link #snapshot}) the shard
   * exactly at that step. It runs on the thread that completed the step, holding the step barrier:
   * keep it short.
   */
  public void onSyncStepApplied(java.util.function.LongConsumer listener) {
    this.syncStepListener = listener;
  }

  /** Tells the sync-step listener that step {@code reached} was applied (SyncAggregator). */
  void syncStepApplied(long reached) {
    try {
      syncStepListener.accept(reached);
    } catch (RuntimeException e) {
      log.error("listener of synchronous step {} failed", reached, e);
    }
  }

  /** Runs {@code listener} each time the shard becomes initialised through FinishInit. */
  public void onInitialised(Runnable listener) {
    this.initListener = listener;
  }

  /**
   * Returns the requested blocks (all dense blocks when none are named) and sparse rows. In the
   * synchronous modes waits (blocking) until the shard reached {@code min_step}.
   */
  public PullParametersResponse pull(PullParametersRequest request) {
    if (mode != TrainingMode.ASYNC && initialised && request.getMinStep() > step.get()) {
      requireSync().awaitStep(request.getMinStep());
    }
    structure.readLock().lock();
    try {
      checkServing();
      PullParametersResponse.Builder out = PullParametersResponse.newBuilder();
      long at = step.get();
      List<DenseBlock> wanted = new ArrayList<>();
      if (request.getBlocksCount() == 0 && request.getSparseRowsCount() == 0) {
        wanted.addAll(blocks.values());
        wanted.sort(BLOCK_ORDER);
      } else {
        for (BlockRef ref : request.getBlocksList()) {
          DenseBlock b = blocks.get(DenseBlock.key(ref.getName(), ref.getBlock()));
          if (b == null) {
            throw ValidatedPush.unknownBlock(ref.getName(), ref.getBlock(), parameters);
          }
          wanted.add(b);
        }
      }
      List<SparseTable> sparseTables = new ArrayList<>();
      List<long[]> sparseIds = new ArrayList<>();
      for (SparseRowsRef ref : request.getSparseRowsList()) {
        SparseTable table = tables.get(ref.getName());
        if (table == null) {
          throw ValidatedPush.unknownTable(ref.getName(), parameters);
        }
        sparseTables.add(table);
        sparseIds.add(ValidatedPush.checkRowIds(table, ref.getRowIdsList()));
      }
      for (DenseBlock b : wanted) {
        out.addBlocks(
            TensorBlock.newBuilder()
                .setName(b.name())
                .setBlock(b.block)
                .setOffset(b.offset)
                .setDtype(DataType.FLOAT32)
                .setData(b.encode()));
      }
      for (int t = 0; t < sparseTables.size(); t++) {
        out.addSparseRows(readRows(sparseTables.get(t), sparseIds.get(t)));
      }
      return out.setStep(at).build();
    } finally {
      structure.readLock().unlock();
    }
  }

  /**
   * The values of the dense blocks {@code push} carried, read as {@link #pull} reads them: after
   * the push (in the synchronous modes, once the shard reached {@code step}).
   */
  public List<TensorBlock> valuesAfter(PushGradientsRequest push, long step) {
    PullParametersRequest.Builder pull =
        PullParametersRequest.newBuilder().setTrainerId(push.getTrainerId());
    if (mode != TrainingMode.ASYNC) {
      pull.setMinStep(step);
    }
    for (TensorBlock g : push.getGradientsList()) {
      pull.addBlocks(BlockRef.newBuilder().setName(g.getName()).setBlock(g.getBlock()));
    }
    return pull(pull.build()).getBlocksList();
  }

  private static SparseRows readRows(SparseTable table, long[] ids) {
    int width = table.width();
    float[] data = new float[ids.length * width];
    SparseRows.Builder rows =
        SparseRows.newBuilder().setName(table.name()).setDtype(DataType.FLOAT32);
    for (int i = 0; i < ids.length; i++) {
      table.read(ids[i], data, i * width);
      rows.addRowIds(ids[i]);
    }
    return rows.setData(TensorCodec.encode(data)).build();
  }

  private void checkNotHeld() {
    String why = held;
    if (why != null) {
      // Reported as UNAVAILABLE, so that trainers retry.
      throw new ServiceException(ErrorReason.SHUTTING_DOWN, why);
    }
  }

  /**
   * Until {@link #releaseCalls()}, every call but status fails with UNAVAILABLE and {@code why}
   * (while the index is claimed and a checkpoint is loaded).
   */
  public void holdCalls(String why) {
    this.held = why;
  }

  /** Ends {@link #holdCalls}. */
  public void releaseCalls() {
    this.held = null;
  }

  private void checkServing() {
    checkNotHeld();
    if (!initialised) {
      throw new ServiceException(
          ErrorReason.NOT_INITIALIZED,
          "pserver "
              + (index < 0 ? "" : index + " ")
              + "is not initialised: call InitParameters and FinishInit first");
    }
    if (draining) {
      throw new ServiceException(
          ErrorReason.SHUTTING_DOWN,
          "pserver " + index + " is shutting down: retry on its replacement");
    }
  }

  private SyncAggregator requireSync() {
    SyncAggregator s = sync;
    if (s == null) {
      throw new ServiceException(
          ErrorReason.SYNC_ABORTED,
          "training mode " + mode + " needs trainer membership, which this pserver does not have");
    }
    return s;
  }

  /** Describes the shard. */
  public ShardStatus status() {
    structure.readLock().lock();
    try {
      ShardStatus.Builder s =
          ShardStatus.newBuilder()
              .setIndex(Math.max(index, 0))
              .setInitialised(initialised)
              .setInitId(initialised && initId != null ? initId : "")
              .setStep(step.get())
              .setParameters(parameters.size())
              .setBlocks(blocks.size())
              .setParameterBytes(bytes())
              .setCheckpointStep(checkpointStep)
              .setMode(mode);
      Replica r = replica != null ? replica : statusRole;
      if (r != null) {
        s.setReplicaRole(r.role());
      }
      if (backupOf >= 0) {
        s.setBackupOf(backupOf);
      }
      blocks.values().stream()
          .sorted(BLOCK_ORDER)
          .forEach(b -> s.addBlockRefs(BlockRef.newBuilder().setName(b.name()).setBlock(b.block)));
      return s.build();
    } finally {
      structure.readLock().unlock();
    }
  }

  private long bytes() {
    long n = 0;
    for (DenseBlock b : blocks.values()) {
      n += 4L * b.values.length;
    }
    for (SparseTable t : tables.values()) {
      n += 4L * t.width() * t.rowCount();
    }
    return n;
  }

  /** Tells {@code listener} the name of every sparse table defined from now on (for metrics). */
  public void onTableDefined(Consumer<String> listener) {
    this.tableListener = listener;
  }

  /** The state of sparse table {@code name}, if it is defined. */
  public Optional<SparseTableStats> sparseTable(String name) {
    return sparseTables().stream().filter(t -> t.name().equals(name)).findFirst();
  }

  /** Rows, bytes, evictions and refused admissions of each sparse table, by name. */
  public List<SparseTableStats> sparseTables() {
    structure.readLock().lock();
    try {
      List<SparseTableStats> out = new ArrayList<>();
      tables.values().stream()
          .sorted(Comparator.comparing(SparseTable::name))
          .forEach(
              t ->
                  out.add(
                      new SparseTableStats(
                          t.name(),
                          t.store.rows(),
                          t.store.bytes(),
                          t.store.evictions(),
                          t.store.admissionsRefused(),
                          t.store.settings().maxRows())));
      return out;
    } finally {
      structure.readLock().unlock();
    }
  }

  /** A consistent-per-block copy of the whole shard with optimizer state, for a checkpoint. */
  public ShardCheckpoint snapshot() {
    structure.readLock().lock();
    try {
      return ShardSnapshots.snapshot(this);
    } finally {
      structure.readLock().unlock();
    }
  }

  /**
   * Streams a checkpoint of the shard to {@code out}, copying one dense block or one table stripe
   * at a time: pushes go on meanwhile, and the memory needed is one stripe's rows.
   *
   * @return the step recorded in the checkpoint
   */
  public long writeCheckpoint(OutputStream out) throws IOException {
    PushLog log = pushLog;
    if (log.enabled()) {
      // With a write-ahead log the checkpoint must be a cut: every push logged before the cut is
      // in it, none after. Pushes wait while it is written.
      structure.writeLock().lock();
      try {
        return ShardSnapshots.write(this, out, log.cut());
      } finally {
        structure.writeLock().unlock();
      }
    }
    structure.readLock().lock();
    try {
      return ShardSnapshots.write(this, out, 0);
    } finally {
      structure.readLock().unlock();
    }
  }

  /** Replaces the shard's content with a checkpoint's; the shard is then initialised. */
  public void restore(ShardCheckpoint checkpoint) {
    ShardRestore restore = beginRestore();
    try {
      for (SparseTableCheckpoint tc : checkpoint.getSparseTablesList()) {
        restore.table(checkpoint, tc);
      }
    } catch (RuntimeException e) {
      restore.discard();
      throw e;
    }
    restore.install(checkpoint.toBuilder().clearSparseTables().build());
  }

  /**
   * Starts restoring a checkpoint that is read as a stream: its table entries go to the returned
   * {@link ShardRestore} as they are read, and its {@link ShardRestore#install} replaces the
   * shard's content at once. The shard is unchanged until then.
   */
  public ShardRestore beginRestore() {
    return new ShardRestore(this);
  }

  /** Installs a restore: see {@link ShardRestore#install}. */
  void install(ShardCheckpoint header, Map<String, SparseTable> staged) {
    structure.writeLock().lock();
    try {
      ShardSnapshots.install(this, header, staged);
      checkpointStep = header.getStep();
      log.info(
          "restored {} blocks, {} sparse tables ({} rows) of init '{}' at step {}",
          blocks.size(),
          tables.size(),
          tables.values().stream().mapToLong(SparseTable::rowCount).sum(),
          initId,
          header.getStep());
    } finally {
      structure.writeLock().unlock();
    }
  }

  /** Drops every parameter: the shard is uninitialised, as after a start with no checkpoint. */
  public void reset() {
    structure.writeLock().lock();
    try {
      clear();
      checkpointStep = 0;
    } finally {
      structure.writeLock().unlock();
    }
    resetSync();
  }

  private void resetSync() {
    SyncAggregator s = sync;
    if (s != null) {
      s.reset();
    }
  }

  /** From now on pushes and pulls fail with SHUTTING_DOWN (graceful shutdown). */
  public void beginDraining() {
    draining = true;
    // Wait for pushes in flight: they hold the read lock.
    structure.writeLock().lock();
    structure.writeLock().unlock();
    SyncAggregator s = sync;
    if (s != null) {
      s.abortAll("pserver " + index + " is shutting down");
    }
  }

  public void setIndex(int index) {
    this.index = index;
  }

  public int index() {
    return index;
  }

  /** Records the step of a checkpoint written or loaded. */
  public void recordCheckpoint(long atStep) {
    this.checkpointStep = atStep;
  }

  /** Connects the synchronous modes to the trainers' membership. */
  public void attachSync(SyncAggregator aggregator) {
    this.sync = aggregator;
  }

  public boolean initialised() {
    return initialised;
  }

  /** When the shard became initialised (epoch milliseconds), or -1 while it is not. */
  public long initialisedAtMs() {
    return initialisedAtMs;
  }

  /** The init id in place, or null. */
  public String initId() {
    structure.readLock().lock();
    try {
      return initialised ? initId : null;
    } finally {
      structure.readLock().unlock();
    }
  }

  public long step() {
    return step.get();
  }

  public TrainingMode mode() {
    return mode;
  }

  /** BOUNDED_STALENESS: pushes a trainer may run ahead of the slowest (0 in the other modes). */
  public int staleness() {
    return staleness;
  }

  /** The optimizer of each parameter and sparse table, by name. */
  public Map<String, OptimizerConfig> optimizers() {
    structure.readLock().lock();
    try {
      Map<String, OptimizerConfig> out = new java.util.TreeMap<>();
      parameters.forEach((name, p) -> out.put(name, p.spec.getOptimizer()));
      return out;
    } finally {
      structure.readLock().unlock();
    }
  }

  // --- package-private access for ShardInit / ShardSnapshots (callers hold the write lock) ---

  Map<String, Parameter> parameters() {
    return parameters;
  }

  Map<String, DenseBlock> blocks() {
    return blocks;
  }

  Map<String, SparseTable> tables() {
    return tables;
  }

  /** Defines sparse table {@code p} with no rows (the caller holds the write lock). */
  void defineTable(Parameter p) {
    installTable(newTable(p));
  }

  /** A sparse table with no rows, not (yet) part of the shard. */
  SparseTable newTable(Parameter p) {
    return new SparseTable(p, sparseSettings);
  }

  /** Makes {@code table} the shard's table of its name (the caller holds the write lock). */
  void installTable(SparseTable table) {
    SparseTable old = tables.put(table.name(), table);
    if (old != null && old != table) {
      old.store.clear();
    }
    tableListener.accept(table.name());
  }

  String pendingInitId() {
    return initId;
  }

  void setDefinition(String initId, TrainingMode mode, int staleness) {
    this.initId = initId;
    this.mode = mode;
    this.staleness = staleness;
  }

  void setInitialised(boolean value) {
    if (value != initialised || !value) {
      initialisedAtMs = value ? System.currentTimeMillis() : -1;
    }
    this.initialised = value;
  }

  void setStep(long value) {
    step.set(value);
  }

  void clear() {
    parameters.clear();
    blocks.clear();
    // Gives the rows' bytes back to the pserver's sparse budget.
    tables.values().forEach(t -> t.store.clear());
    tables.clear();
    initId = null;
    mode = TrainingMode.ASYNC;
    staleness = 0;
    initialised = false;
    initialisedAtMs = -1;
    step.set(0);
    applied.clear();
  }

  AppliedSteps appliedSteps() {
    return applied;
  }
}
