package dev.paramserver.pserver.shard;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.RowRemoval;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.sparse.Removals;
import dev.paramserver.pserver.sparse.SparseRowStore;
import dev.paramserver.tensor.ReceiveBuffers;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The push path of {@link ParameterShard}: validates a push, applies it once (a push identified by
 * trainer, session, step and part that was applied before changes nothing), logs it (write-ahead
 * log, then the backup) before it is applied, and replays logged records.
 */
final class PushPath {
  private static final Logger log = LoggerFactory.getLogger(PushPath.class);

  private final ParameterShard shard;
  private final boolean rejectNonFinite;
  private final AppliedSteps applied = new AppliedSteps();
  private final AtomicLong step = new AtomicLong();
  // the arrays asynchronous pushes' answer rows are read into, given back once written
  final ReceiveBuffers answerArrays = new ReceiveBuffers();
  private volatile PushLog pushLog = PushLog.NONE;
  private volatile Replica replica;
  private volatile RecordTap tap;
  private volatile AppliedFeed feed;
  // Held while a logged push is logged, handed to the backup and applied (see logAndApply).
  private final Object order = new Object();
  private volatile SyncAggregator sync;

  PushPath(ParameterShard shard, boolean rejectNonFinite) {
    this.shard = shard;
    this.rejectNonFinite = rejectNonFinite;
  }

  AppliedSteps applied() {
    return applied;
  }

  AtomicLong step() {
    return step;
  }

  PushLog pushLog() {
    return pushLog;
  }

  void attachLog(PushLog log) {
    this.pushLog = log;
  }

  void attachSync(SyncAggregator aggregator) {
    this.sync = aggregator;
  }

  SyncAggregator sync() {
    return sync;
  }

  SyncAggregator requireSync() {
    SyncAggregator s = sync;
    if (s == null) {
      throw new ServiceException(
          ErrorReason.SYNC_ABORTED,
          "training mode " + shard.mode() + " needs trainer membership, which this pserver lacks");
    }
    return s;
  }

  /** Waits for the pushes in flight (they hold the read lock) and aborts synchronous steps. */
  void awaitInFlight(String why) {
    shard.structure().writeLock().lock();
    shard.structure().writeLock().unlock();
    SyncAggregator s = sync;
    if (s != null) {
      s.abortAll(why);
    }
  }

  Replica replica() {
    return replica;
  }

  void attachReplica(Replica replica) {
    this.replica = replica;
  }

  /** Hands every record applied from now on to {@code tap} (one at a time: it replaces any). */
  void attachTap(RecordTap tap) {
    this.tap = tap;
  }

  void attachFeed(AppliedFeed feed) {
    this.feed = feed;
  }

  /** Stops handing records to {@code tap}, if it is still the one attached (see ShardMoves). */
  void detachTap(RecordTap tap) {
    synchronized (order) {
      if (this.tap == tap) {
        this.tap = null;
      }
    }
  }

  PushOutcome pushOutcome(PushGradientsRequest request) {
    // Read before the push is applied: a backup detached meanwhile (the role moved on, the lease
    // was lost) still decides whether the push may be acknowledged, its settle refusing it then.
    Replica r = replica;
    PushOutcome outcome = applyPush(request);
    Replica now = replica;
    if (r != null) {
      r.settle();
    }
    if (now != null && now != r) {
      now.settle();
    }
    return outcome;
  }

  /**
   * {@link #pushOutcome} for a push applied on a transport thread (asynchronous mode, a log that
   * does not wait for the disk): applies it here, then completes once the backup holds it, without
   * holding this thread meanwhile (see {@link Replica#settleAsync}). A push that cannot be applied
   * throws at once, as {@code pushOutcome} does.
   */
  CompletableFuture<PushOutcome> pushOutcomeAsync(PushGradientsRequest request, Executor blocking) {
    Replica r = replica;
    PushOutcome outcome = applyPush(request);
    Replica now = replica;
    CompletableFuture<Void> settled =
        r == null ? CompletableFuture.completedFuture(null) : r.settleAsync(blocking);
    if (now != null && now != r) {
      settled = settled.thenCompose(v -> now.settleAsync(blocking));
    }
    return settled.thenApply(v -> outcome);
  }

  private PushOutcome applyPush(PushGradientsRequest request) {
    shard.structure().readLock().lock();
    ValidatedPush push;
    try {
      shard.checkServing();
      // part is a uint32: 2^31 and more arrive as negative ints
      if (request.getPart() < 0 || request.getPart() >= ParameterShard.MAX_PARTS) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            "push part "
                + Integer.toUnsignedString(request.getPart())
                + " is out of range: parts are 0.."
                + (ParameterShard.MAX_PARTS - 1));
      }
      AppliedSteps.checkWindow(request);
      if (AppliedSteps.identified(request)
          && (applied.applied(request)
              || (request.getResentFromCount() > 0
                  && applied.appliedEarlier(request, shard.index())))) {
        return new PushOutcome(step.get(), true);
      }
      // A synchronous step may be summed, logged and applied after this call returned: its
      // gradients and request must not be views of the received buffers, released by then.
      boolean async = shard.mode() == TrainingMode.ASYNC;
      // asynchronous: a push that asks for its rows gets them read as they are updated
      push =
          ValidatedPush.of(
              async ? request : unaliased(request),
              shard.parameters(),
              shard.blocks(),
              shard.tables(),
              rejectNonFinite,
              shard.gate().rowOwnership(),
              async && request.getReturnRows() && request.getSparseGradientsCount() > 0
                  ? answerArrays::take
                  : null,
              // applied below on this thread, and not read after
              async ? GradientScratch.ofThread() : null);
      if (async) {
        long reached;
        try {
          reached = applyOneLocked(push, true);
        } catch (RuntimeException e) {
          push.lentArrays().forEach(answerArrays::give);
          throw e;
        }
        if (reached < 0 || !request.getReturnRows() || request.getSparseGradientsCount() == 0) {
          push.lentArrays().forEach(answerArrays::give);
          return outcome(reached);
        }
        return push.answered(reached);
      }
    } finally {
      shard.structure().readLock().unlock();
    }
    return outcome(requireSync().contribute(request.getTrainerId(), request.getStep(), push));
  }

  private PushOutcome outcome(long stepOrDuplicate) {
    return stepOrDuplicate < 0
        ? new PushOutcome(step.get(), true)
        : new PushOutcome(stepOrDuplicate, false);
  }

  boolean alreadyApplied(PushGradientsRequest request) {
    return request != null && AppliedSteps.identified(request) && applied.applied(request);
  }

  long applyOne(ValidatedPush push) {
    shard.structure().readLock().lock();
    try {
      return applyOneLocked(push, true);
    } finally {
      shard.structure().readLock().unlock();
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
      run.record(request);
      return reached;
    }
  }

  long applySummed(List<ValidatedPush> pushes) {
    shard.structure().readLock().lock();
    try {
      return applySummedLocked(pushes, true);
    } finally {
      shard.structure().readLock().unlock();
    }
  }

  private long applySummedLocked(List<ValidatedPush> pushes, boolean log) {
    ValidatedPush sum = pushes.size() == 1 ? pushes.get(0) : ValidatedGradients.sum(pushes);
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
    RecordTap t = tap;
    AppliedFeed f = feed;
    if (!log || (!pushLog.enabled() && r == null && t == null && f == null)) {
      ValidatedGradients.apply(push);
      return step.incrementAndGet();
    }
    WalRecord record =
        WalRecord.newBuilder().addAllPushes(requests).setInitId(shard.pendingInitId()).build();
    PushLog.Written written;
    long reached;
    synchronized (order) {
      try {
        written = pushLog.write(record);
      } catch (UncheckedIOException e) {
        throw logFailed(e);
      }
      if (r == null && f == null) {
        ValidatedGradients.apply(push);
      } else {
        // The backup gets the record after it was applied, with the rows the tables removed
        // meanwhile (cap, TTL), so that it removes the same ones (see Removals);
        // still under the order lock and the read lock, so in the log's order and never across a
        // copy's cut.
        Removals removals = Removals.recording();
        try {
          ValidatedGradients.apply(push);
        } finally {
          Removals.end();
        }
        // the backup's call may send the record after this push was answered and its received
        // buffers released: it gets a copy
        WalRecord full = withRemovals(unaliased(record), removals.recorded());
        if (r != null) {
          r.append(full);
        }
        if (f != null) {
          f.applied(step.get() + 1, full);
        }
      }
      if (t != null) {
        t.append(record);
      }
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

  private WalRecord withRemovals(WalRecord record, List<Removals.Removal> removed) {
    if (removed.isEmpty()) {
      return record;
    }
    Map<SparseRowStore, String> names = new IdentityHashMap<>();
    shard.tables().values().forEach(t -> names.put(t.store, t.name()));
    WalRecord.Builder b = record.toBuilder();
    for (Removals.Removal x : removed) {
      b.addRemovals(
          RowRemoval.newBuilder()
              .setTable(names.getOrDefault(x.store(), ""))
              .setUpdate(x.update())
              .setPosition(x.position())
              .setPhase(x.phase())
              .setRowId(x.id()));
    }
    return b.build();
  }

  /**
   * A backup applies its primary's record: as {@link #replay}, but its tables remove exactly the
   * rows the primary's removed ({@code record.removals}) and decide no eviction or expiry of their
   * own.
   */
  boolean replayReplicated(WalRecord record) {
    List<Removals.Removal> script = new ArrayList<>();
    for (RowRemoval x : record.getRemovalsList()) {
      SparseTable t = shard.tables().get(x.getTable());
      if (t != null) {
        script.add(
            new Removals.Removal(
                t.store, x.getUpdate(), x.getPosition(), x.getPhase(), x.getRowId()));
      }
    }
    Removals.following(script);
    try {
      return replay(record.toBuilder().clearRemovals().build());
    } finally {
      Removals.end();
    }
  }

  /** A copy of {@code request} that shares no bytes with it (nor with the received buffers). */
  private static PushGradientsRequest unaliased(PushGradientsRequest request) {
    try {
      return PushGradientsRequest.parseFrom(request.toByteArray());
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("a push does not parse back: " + e.getMessage(), e);
    }
  }

  private static WalRecord unaliased(WalRecord record) {
    try {
      return WalRecord.parseFrom(record.toByteArray());
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("a log record does not parse back: " + e.getMessage(), e);
    }
  }

  private ServiceException logFailed(UncheckedIOException e) {
    String why =
        "pserver "
            + shard.index()
            + " cannot write its write-ahead log ("
            + e.getMessage()
            + "): it serves nothing until restarted";
    shard.gate().hold(why);
    PushPath.log.error(why, e);
    return new ServiceException(ErrorReason.SHUTTING_DOWN, why);
  }

  /**
   * The new owner of moving slots applies a record their old owner forwarded (already filtered to
   * them): not checked for ownership nor for a duplicate (the old owner applied it exactly once,
   * and the move's attempt forwards it once), then recorded as applied, as the move's copy records
   * the pushes applied before its cut: a trainer that lost the answer and finds the old owner gone
   * resends its pieces here, and they are answered as duplicates (see {@link
   * AppliedSteps#appliedEarlier}). Each piece of a refused push has a part of its own, so a record
   * forwarded from one server is never taken for another server's piece of the same step.
   *
   * @return false when the record was skipped (of another initialisation, or empty)
   */
  boolean replayForwarded(WalRecord record) {
    shard.structure().readLock().lock();
    try {
      if (!shard.initialised()
          || !record.getInitId().equals(shard.pendingInitId())
          || record.getPushesCount() == 0) {
        return false;
      }
      for (PushGradientsRequest r : record.getPushesList()) {
        logAndApply(
            ValidatedPush.of(
                r,
                shard.parameters(),
                shard.blocks(),
                shard.tables(),
                false,
                RowOwnership.UNCHECKED),
            List.of(r),
            false);
        applied.record(r);
      }
      return true;
    } finally {
      shard.structure().readLock().unlock();
    }
  }

  /**
   * Appends a move's moved-in record ({@code WalRecord.moved_in}) to the log, in the log's order
   * (under the read lock, so on one side of a checkpoint's cut), and waits until it is as durable
   * as the log's sync setting promises. Neither applied (the move applied the copy and records
   * already) nor handed to a backup or tap.
   *
   * @return false when there is no log (nothing written)
   */
  boolean logMovedIn(WalRecord record) {
    if (!pushLog.enabled()) {
      return false;
    }
    PushLog.Written written;
    shard.structure().readLock().lock();
    try {
      synchronized (order) {
        try {
          written = pushLog.write(record);
        } catch (UncheckedIOException e) {
          throw logFailed(e);
        }
      }
    } finally {
      shard.structure().readLock().unlock();
    }
    try {
      written.awaitDurable();
    } catch (UncheckedIOException e) {
      throw logFailed(e);
    }
    return true;
  }

  boolean replay(WalRecord record) {
    if (!record.getMovedInMove().isEmpty()) {
      // a slot move's moved-in record: installs under the write lock, so before the read lock
      return SlotTransfer.replayMovedIn(shard, record);
    }
    shard.structure().readLock().lock();
    try {
      if (!shard.initialised()
          || !record.getInitId().equals(shard.pendingInitId())
          || record.getPushesCount() == 0) {
        return false;
      }
      List<ValidatedPush> pushes = new ArrayList<>();
      for (PushGradientsRequest r : record.getPushesList()) {
        pushes.add(
            ValidatedPush.of(
                r,
                shard.parameters(),
                shard.blocks(),
                shard.tables(),
                false,
                RowOwnership.UNCHECKED));
      }
      if (pushes.size() == 1) {
        return applyOneLocked(pushes.get(0), false) >= 0;
      }
      applySummedLocked(pushes, false);
      return true;
    } finally {
      shard.structure().readLock().unlock();
    }
  }
}
