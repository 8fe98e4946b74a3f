package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.sparse.SparseSettings;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;

/**
 * The parameters this pserver holds: dense float32 blocks and sparse tables with their optimizer
 * state. Thread-safe: definitions change under a write lock; pushes and pulls share a read lock and
 * lock each block (or sparse row) while they touch it, so concurrent pushes never lose an update.
 * With a write-ahead log or a backup, pushes are logged and applied one at a time, in the log's
 * order, which is the order a restart and the backup apply them in ({@link PushPath}).
 *
 * <p>A passive store: the push path ({@link PushPath}), the pull path ({@link ShardReads}), init
 * ({@link ShardInit}) and snapshots ({@link ShardSnapshots}) are its parts. Which index it carries
 * and whether it answers calls is decided by the role lifecycle ({@code ShardLifecycle}), the only
 * caller of {@link #holdCalls}, {@link #releaseCalls}, {@link #indexFrom}, {@link #setPservers},
 * {@link #attachReplica} and {@link #beginDraining} in the service.
 *
 * <p>Before {@link #finishInit} every push and pull fails with NOT_INITIALIZED.
 */
public final class ParameterShard {
  static final Comparator<DenseBlock> BLOCK_ORDER =
      Comparator.comparing(DenseBlock::name).thenComparingInt(b -> b.block);

  /** Parts of one step a push may be cut into (the {@code part} field is below this). */
  static final int MAX_PARTS = 1 << 16;

  private final SparseSettings sparseSettings;
  private final LongSupplier sparseClock;
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
  private final ShardEvents events = new ShardEvents();

  private final CallGate gate = new CallGate();
  final PushPath pushes;
  private final ShardReads reads = new ShardReads(this);
  private final ShardDescription description = new ShardDescription(this);

  /** A shard with unlimited sparse tables; see the other constructor. */
  public ParameterShard(boolean rejectNonFinite) {
    this(rejectNonFinite, SparseSettings.unlimited());
  }

  /** A shard whose sparse tables' eviction policies read {@link System#nanoTime}. */
  public ParameterShard(boolean rejectNonFinite, SparseSettings sparseSettings) {
    this(rejectNonFinite, sparseSettings, System::nanoTime);
  }

  /**
   * @param rejectNonFinite reject gradients holding NaN or Inf (NON_FINITE_GRADIENT)
   * @param sparseSettings caps, eviction and admission of the sparse tables
   * @param sparseClock nanoseconds, for the sparse tables' eviction policies (LFU half-lives,
   *     TTLs); tests pass a clock they move
   */
  public ParameterShard(
      boolean rejectNonFinite, SparseSettings sparseSettings, LongSupplier sparseClock) {
    this.sparseSettings = sparseSettings;
    this.sparseClock = sparseClock;
    this.pushes = new PushPath(this, rejectNonFinite);
  }

  /** Defines parameters and stores initial blocks; see {@code ParameterServer.InitParameters}. */
  public int init(InitParametersRequest request) {
    gate.checkNotHeld();
    return ShardInit.applyLocked(this, request);
  }

  /**
   * Marks the shard initialised after checking the block count, then tells the init listener (which
   * checkpoints the fresh shard, so that its write-ahead log has a base to replay onto).
   */
  public void finishInit(FinishInitRequest request) {
    gate.checkNotHeld();
    if (ShardInit.finishLocked(this, request)) {
      events.initialised();
    }
  }

  /** {@link #pushOutcome}, answering the shard's update count after the push. */
  public long push(PushGradientsRequest request) {
    return pushOutcome(request).step();
  }

  /**
   * Validates the whole push, then applies it once: a push identified by (trainer, session, step,
   * part) that was applied before is answered as a duplicate and changes nothing. The push is in
   * the write-ahead log (and, with a backup, on it) before this returns. A rejected push changes
   * nothing.
   */
  public PushOutcome pushOutcome(PushGradientsRequest request) {
    return ShardMoves.placed(gate, () -> pushes.pushOutcome(request));
  }

  /**
   * Applies one record of the write-ahead log again (restart, or a backup following its primary),
   * without logging it: a push applied already (by the checkpoint) is skipped; a slot move's
   * moved-in record installs its copy again ({@link ShardMoves#logMovedIn}).
   *
   * @return false when the record was skipped (duplicate, or of another initialisation)
   */
  public boolean replay(WalRecord record) {
    return pushes.replay(record);
  }

  /**
   * A backup applies a record its primary sent: as {@link #replay}, removing exactly the sparse
   * rows the primary removed while applying it ({@code WalRecord.removals}) and no other.
   */
  public boolean replayReplicated(WalRecord record) {
    return pushes.replayReplicated(record);
  }

  /** True when a push may wait (synchronous mode, fsyncing log, backup, a slot move coming in). */
  public boolean pushMayBlock() {
    return mode != TrainingMode.ASYNC
        || pushes.pushLog().blocks()
        || pushes.replica() != null
        || gate.rowOwnership().awaitsMove();
  }

  /** Sends each record logged from now on to {@code replica} (null: none). Lifecycle only. */
  public void attachReplica(Replica replica) {
    pushes.attachReplica(replica);
  }

  /**
   * Writes a copy of the whole shard (as a checkpoint file holds it) for a new backup, under the
   * write lock: no push is applied meanwhile, so the copy holds exactly the pushes logged before
   * {@code atCut} runs (still under the lock) and none after.
   *
   * @return false (and writes nothing) when the shard is not initialised
   */
  public boolean writeCopy(OutputStream out, Runnable atCut) throws IOException {
    return ShardSnapshots.writeCopy(this, out, atCut);
  }

  /** Logs every push applied from now on to {@code log} before it is answered. */
  public void attachLog(PushLog log) {
    pushes.attachLog(log);
  }

  /**
   * Returns the requested blocks (all dense blocks when none are named) and sparse rows. In the
   * synchronous modes waits (blocking) until the shard reached {@code min_step}.
   */
  public PullParametersResponse pull(PullParametersRequest request) {
    return ShardMoves.placed(gate, () -> reads.pull(request));
  }

  /**
   * The blocks ({@code return_values}) and, with {@code rows}, rows ({@code return_rows}) of {@code
   * push}, as {@link #pull} reads them after it (synchronous modes: at {@code step}); see {@link
   * PushOutcome#rows}.
   */
  public PullParametersResponse valuesAfter(PushGradientsRequest push, long step, boolean rows) {
    return ShardMoves.placed(gate, () -> reads.valuesAfter(push, step, rows, null));
  }

  /**
   * Until {@link #releaseCalls()}, every call but status fails with UNAVAILABLE and {@code why}
   * (while the index is claimed and a checkpoint is loaded). Role lifecycle only.
   */
  public void holdCalls(String why) {
    gate.hold(why);
  }

  /** Ends {@link #holdCalls}. Role lifecycle only. */
  public void releaseCalls() {
    gate.release();
  }

  void checkServing() {
    gate.checkServing(initialised);
  }

  /** Who is told of new tables, initialisation and synchronous steps. */
  public ShardEvents events() {
    return events;
  }

  /** Describes the shard's content (the role lifecycle adds the replication role). */
  public ShardStatus status() {
    return description.status();
  }

  /** The state of sparse table {@code name}, if it is defined. */
  public Optional<SparseTableStats> sparseTable(String name) {
    return sparseTables().stream().filter(t -> t.name().equals(name)).findFirst();
  }

  /** Rows, bytes, evictions and refused admissions of each sparse table, by name. */
  public List<SparseTableStats> sparseTables() {
    return description.sparseTables();
  }

  /** A consistent-per-block copy of the whole shard with optimizer state, for a checkpoint. */
  public ShardCheckpoint snapshot() {
    return ShardSnapshots.snapshotLocked(this);
  }

  /**
   * Streams a checkpoint of the shard to {@code out}, copying one dense block or one table stripe
   * at a time: pushes go on meanwhile, and the memory needed is one stripe's rows.
   *
   * @return the step recorded in the checkpoint
   */
  public long writeCheckpoint(OutputStream out) throws IOException {
    return ShardSnapshots.writeCheckpoint(this, out, pushes.pushLog());
  }

  /** Replaces the shard's content with a checkpoint's; the shard is then initialised. */
  public void restore(ShardCheckpoint checkpoint) {
    ShardRestore.restore(this, checkpoint);
  }

  /**
   * Starts restoring a checkpoint that is read as a stream: its table entries go to the returned
   * {@link ShardRestore} as they are read, and its {@link ShardRestore#install} replaces the
   * shard's content at once. The shard is unchanged until then.
   */
  public ShardRestore beginRestore() {
    return new ShardRestore(this);
  }

  /** Drops every parameter: the shard is uninitialised, as after a start with no checkpoint. */
  public void reset() {
    ShardInit.reset(this);
  }

  /**
   * From now on pushes and pulls fail with SHUTTING_DOWN (graceful shutdown); returns once the
   * pushes in flight finished. Role lifecycle only.
   */
  public void beginDraining() {
    gate.drain();
    pushes.awaitInFlight("pserver " + gate.index() + " is shutting down");
  }

  /** Carries {@code holder}'s index (before: -1); again when it changed. Role lifecycle only. */
  public void indexFrom(IndexHolder holder) {
    gate.indexFrom(holder);
  }

  /** Sets the job's number of pservers (0: unknown), see {@link RowOwnership}. Lifecycle only. */
  public void setPservers(int pservers) {
    gate.setPservers(pservers);
  }

  /** The index the shard carries, or -1. */
  public int index() {
    return gate.index();
  }

  /** Records the step of a checkpoint written or loaded. */
  public void recordCheckpoint(long atStep) {
    description.recordCheckpoint(atStep);
  }

  /** Connects the synchronous modes to the trainers' membership (their barrier). */
  public void attachSync(SyncAggregator aggregator) {
    pushes.attachSync(aggregator);
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
    return pushes.step().get();
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
    return description.optimizers();
  }

  // --- package-private access for the shard's parts (writers hold the write lock) ---

  ReentrantReadWriteLock structure() {
    return structure;
  }

  CallGate gate() {
    return gate;
  }

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
    return new SparseTable(p, sparseSettings, sparseClock);
  }

  /** Makes {@code table} the shard's table of its name (the caller holds the write lock). */
  void installTable(SparseTable table) {
    SparseTable old = tables.put(table.name(), table);
    if (old != null && old != table) {
      old.store.clear();
    }
    events.tableDefined(table.name());
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
    pushes.step().set(0);
    pushes.applied().clear();
  }
}
