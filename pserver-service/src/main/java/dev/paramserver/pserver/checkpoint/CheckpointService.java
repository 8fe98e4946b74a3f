package dev.paramserver.pserver.checkpoint;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.registration.ShardPersistence;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardRestore;
import dev.paramserver.pserver.wal.WriteAheadLog;
import dev.paramserver.service.LifecyclePhases;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * Checkpoints the shard on a timer ({@code paramserver.pserver.checkpoint-interval}), on demand
 * ({@code POST /admin/checkpoint}) and on graceful shutdown, and loads a claimed index's newest
 * checkpoint. A timer tick with no update since the last checkpoint writes nothing.
 *
 * <p>With the write-ahead log on ({@code paramserver.pserver.wal.enabled}), a load replays the log
 * after the checkpoint, a shard is checkpointed as soon as it is initialised (the base the log
 * replays onto), and each checkpoint truncates the log: segments older than the previous
 * checkpoint's (its fallback) are deleted.
 *
 * <p>With {@code paramserver.pserver.checkpoint-consistency=job} it also takes part in job-wide
 * checkpoints (see {@link JobCheckpoints}): pserver 0 proposes one at each timer tick and on
 * demand, and a load while the job is not running (no trainer nor other pserver registered since
 * before it) restores the newest complete one.
 */
@Component
public final class CheckpointService implements ShardPersistence, SmartLifecycle {
  private static final Logger log = LoggerFactory.getLogger(CheckpointService.class);

  private final ParameterShard shard;
  private final CheckpointStore store;
  private final Duration interval;
  private ScheduledExecutorService timer;
  private volatile LastCheckpoint last;
  private volatile Consumer<Duration> writeObserver = d -> {};
  private volatile boolean running;
  private final WriteAheadLog wal;
  private final Coordinator coordinator;
  private final int desired;
  // Job-wide checkpoints, or null when checkpoint-consistency is independent.
  private final JobCheckpoints job;
  // The log segment of the newest checkpoint written or loaded (0: none).
  private long lastCut;

  /** The newest checkpoint written or loaded, and how long writing it took. */
  public record LastCheckpoint(String path, long step, long timestampMs, double writeSeconds) {}

  /** A service whose checkpoints are local files (tests and tools). */
  public CheckpointService(
      ParameterShard shard, Coordinator coordinator, PserverProperties properties) {
    this(
        shard,
        coordinator,
        properties,
        Storage.create(S3Settings.defaults(), "paramserver.pserver.s3"));
  }

  /**
   * @param storage where checkpoints are written and read: local files or {@code s3://} objects
   */
  @Autowired
  public CheckpointService(
      ParameterShard shard,
      Coordinator coordinator,
      PserverProperties properties,
      Storage storage) {
    this.shard = shard;
    this.store =
        new CheckpointStore(
            coordinator.kv(), coordinator.keys(), properties.checkpointDir(), storage);
    this.interval = properties.checkpointInterval();
    this.coordinator = coordinator;
    this.desired = properties.desired();
    this.job =
        properties.checkpointConsistency() == PserverProperties.CheckpointConsistency.JOB
            ? new JobCheckpoints(shard, coordinator.kv(), coordinator.keys(), store)
            : null;
    PserverProperties.Wal w = properties.wal();
    this.wal =
        w.enabled()
            ? new WriteAheadLog(
                w.dir() == null ? properties.localCheckpointDir() : w.dir(),
                w.sync(),
                w.batchInterval())
            : null;
    if (wal != null) {
      shard.onInitialised(this::checkpointInitialised);
    }
  }

  private void checkpointInitialised() {
    try {
      checkpointNow();
    } catch (RuntimeException e) {
      log.error(
          "checkpoint of the freshly initialised pserver {} failed: its write-ahead log has no"
              + " base until the next checkpoint",
          shard.index(),
          e);
    }
  }

  /** The write-ahead log, or null when it is off. */
  public WriteAheadLog wal() {
    return wal;
  }

  /** Replays the log after checkpoint segment {@code fromSegment}, then logs to a new segment. */
  private synchronized void openLog(int index, long fromSegment) {
    openLog(index, fromSegment, true);
  }

  /**
   * Opens the log after checkpoint segment {@code fromSegment}, replaying its records if {@code
   * apply} (else they are read and set aside: a job-wide checkpoint was restored instead).
   */
  private synchronized void openLog(int index, long fromSegment, boolean apply) {
    if (wal == null) {
      return;
    }
    long start = System.nanoTime();
    WriteAheadLog.Replayed r =
        wal.open(
            index,
            fromSegment,
            record -> {
              if (!apply) {
                return false;
              }
              try {
                return shard.replay(record);
              } catch (RuntimeException e) {
                log.error(
                    "write-ahead log record of pserver {} cannot be replayed: skipped", index, e);
                return false;
              }
            });
    lastCut = fromSegment;
    shard.attachLog(wal);
    if (r.records() > 0 || r.tornBytes() > 0) {
      log.info(
          "pserver {} replayed {} write-ahead log records ({} applied, {} skipped as applied) from"
              + " {} segments in {} ms; torn tail: {} bytes; now at step {}",
          index,
          r.records(),
          r.applied(),
          r.records() - r.applied(),
          r.segments(),
          (System.nanoTime() - start) / 1_000_000,
          r.tornBytes(),
          shard.step());
    }
  }

  /** Sets who is told how long each checkpoint write took (for metrics); replaces the last one. */
  public void onWritten(Consumer<Duration> observer) {
    this.writeObserver = observer;
  }

  /**
   * Loads the newest readable checkpoint of {@code index}, streaming its table rows into fresh row
   * stores: the shard is emptied first (its calls are held meanwhile), so memory holds one copy of
   * the tables plus one entry being read, never the old content beside the new.
   */
  @Override
  public void load(int index) {
    if (job != null && loadJobCheckpoint(index)) {
      return;
    }
    shard.reset();
    Optional<CheckpointStore.Loaded> loaded = store.load(index, () -> restorer(shard));
    if (loaded.isEmpty()) {
      shard.reset();
      last = null;
      openLog(index, 0);
      return;
    }
    ShardCheckpoint cp = loaded.get().checkpoint();
    log.info(
        "pserver {} loaded checkpoint {} at step {}", index, loaded.get().path(), cp.getStep());
    last = new LastCheckpoint(loaded.get().path(), cp.getStep(), cp.getCreatedMs(), 0);
    openLog(index, cp.getWalSegment());
  }

  /**
   * Restores this shard's part of the newest complete job-wide checkpoint, if there is one and the
   * job is not running (see {@link #runningSince}: the job, or all its pservers and trainers,
   * restart). The write-ahead log after it is set aside, and a checkpoint of the restored state is
   * written at once, so that a later restart of this shard alone comes back to it plus what
   * follows.
   *
   * @return true if it was restored
   */
  private boolean loadJobCheckpoint(int index) {
    Optional<JobCheckpoints.Complete> complete;
    try {
      complete = job.newestComplete();
      if (complete.isEmpty() || !complete.get().shards().containsKey(index)) {
        log.info("no complete job-wide checkpoint: pserver {} loads its own newest", index);
        return false;
      }
      if (complete.get().restoredBy().contains(index)) {
        log.info(
            "pserver {} restored job-wide checkpoint {} before: it loads its own newest checkpoint"
                + " and log, which go on from there",
            index,
            complete.get().id());
        return false;
      }
      Optional<String> running = runningSince(index, complete.get().revision());
      if (running.isPresent()) {
        log.info(
            "pserver {} restarts into a running job ({} registered before job-wide checkpoint {}"
                + " was complete is still there): it loads its own newest checkpoint and log",
            index,
            running.get(),
            complete.get().id());
        return false;
      }
    } catch (RuntimeException e) {
      log.warn("cannot read the job-wide checkpoints: {}", e.toString());
      return false;
    }
    JobCheckpoints.Complete c = complete.get();
    CheckpointMeta meta = c.shards().get(index);
    shard.reset();
    try {
      store.loadFile(meta, restorer(shard));
    } catch (java.io.IOException | RuntimeException e) {
      shard.reset();
      log.error(
          "job-wide checkpoint {} of pserver {} ({}) is unreadable: loading its own newest"
              + " checkpoint instead",
          c.id(),
          index,
          meta.getPath(),
          e);
      return false;
    }
    log.info(
        "pserver {} restored job-wide checkpoint {} at step {} from {}: every shard of the job"
            + " restores the same step",
        index,
        c.id(),
        c.step(),
        meta.getPath());
    last = new LastCheckpoint(meta.getPath(), c.step(), meta.getTimestampMs(), 0);
    openLog(index, 0, false);
    try {
      checkpointNow();
      // a later restart of this shard alone (the job goes on from here) must not restore it again
      job.markRestored(c.id(), index);
    } catch (RuntimeException e) {
      log.error("checkpoint of the restored job-wide state of pserver {} failed", index, e);
    }
    return true;
  }

  /**
   * Whether the job is still running: a trainer ({@code trainers/<id>}) or another pserver ({@code
   * ps/<idx>}) whose registration is older than {@code revision} (when the newest job-wide
   * checkpoint became complete) is still registered, so it trained or served past that checkpoint.
   * After a restart of the job every registration is newer (trainers and pservers of the new run
   * may register in any order).
   *
   * @return the key of such a registration, or empty
   */
  private Optional<String> runningSince(int index, long revision) {
    String own = coordinator.keys().ps(index);
    for (String prefix :
        List.of(coordinator.keys().trainersPrefix(), coordinator.keys().psPrefix())) {
      for (KeyValueStore.KeyValue k : coordinator.kv().getPrefix(prefix)) {
        if (k.createRevision() < revision && !k.key().equals(own)) {
          return Optional.of(k.key().substring(coordinator.keys().prefix().length()));
        }
      }
    }
    return Optional.empty();
  }

  /**
   * Pserver 0 with {@code checkpoint-consistency=job}, in synchronous mode: proposes a job-wide
   * checkpoint a little ahead of the current step (see {@link JobCheckpoints}).
   *
   * @return its id and step, or empty when none was proposed (not pserver 0, not synchronous, not
   *     initialised, consistency independent, or the previous proposal is still ahead)
   */
  public Optional<dev.paramserver.proto.v1.JobCheckpoint> proposeJobCheckpoint() {
    if (job == null) {
      return Optional.empty();
    }
    return job.propose(desiredShards());
  }

  private int desiredShards() {
    try {
      return coordinator
          .kv()
          .get(coordinator.keys().psDesired())
          .map(kv -> Integer.parseInt(kv.valueAsString().trim()))
          .orElse(desired);
    } catch (RuntimeException e) {
      return desired;
    }
  }

  /** The job-wide checkpoints, or null when checkpoint-consistency is independent (tests). */
  JobCheckpoints jobCheckpoints() {
    return job;
  }

  /**
   * Makes the state the shard holds in memory that of {@code index} (a backup taking over its
   * shard): the log of {@code index} starts afresh (segments this process kept from an earlier life
   * are deleted, they describe another state), and a checkpoint is written at once, the base the
   * new log replays onto.
   */
  public void adopt(int index) {
    last = null;
    openLog(index, 0);
    shard.setIndex(index);
    checkpointNow();
  }

  /**
   * Deletes the log segments this process holds for {@code index} (it becomes a backup: its state
   * will come from the primary, and old segments must not be replayed onto another state later).
   */
  public synchronized void discardLog(int index) {
    if (wal != null) {
      wal.open(index, 0, record -> false);
      lastCut = 0;
    }
    last = null;
  }

  /** Streams a checkpoint into {@code shard} (see {@link ParameterShard#beginRestore}). */
  public static CheckpointStore.Restorer restorer(ParameterShard shard) {
    ShardRestore restore = shard.beginRestore();
    return new CheckpointStore.Restorer() {
      @Override
      public void table(ShardCheckpoint headerSoFar, SparseTableCheckpoint table) {
        restore.table(headerSoFar, table);
      }

      @Override
      public void install(ShardCheckpoint header) {
        restore.install(header);
      }

      @Override
      public void discard() {
        restore.discard();
      }
    };
  }

  /**
   * Writes a checkpoint now.
   *
   * @return its metadata, or empty when the shard has no index or is not initialised
   */
  public synchronized Optional<CheckpointMeta> checkpointNow() {
    int index = shard.index();
    if (index < 0 || !shard.initialised()) {
      return Optional.empty();
    }
    long started = System.nanoTime();
    CheckpointMeta meta = store.write(index, shard::writeCheckpoint);
    shard.recordCheckpoint(meta.getStep());
    if (wal != null && wal.segment() > 0) {
      // The checkpoint cut the log at the segment now being written; the previous checkpoint
      // (kept as a fallback) needs the segments from its own cut on.
      long cut = wal.segment();
      wal.deleteBefore(lastCut);
      lastCut = cut;
    }
    long nanos = System.nanoTime() - started;
    double seconds = nanos / 1e9;
    writeObserver.accept(Duration.ofNanos(nanos));
    last = new LastCheckpoint(meta.getPath(), meta.getStep(), meta.getTimestampMs(), seconds);
    log.debug("checkpoint at step {} took {} s", meta.getStep(), seconds);
    return Optional.of(meta);
  }

  private void onTimer() {
    synchronized (this) {
      LastCheckpoint l = last;
      if (l == null || l.step() != shard.step()) {
        try {
          checkpointNow();
        } catch (RuntimeException e) {
          log.warn("periodic checkpoint failed, retrying at the next tick: {}", e.toString());
        }
      }
    }
    try {
      proposeJobCheckpoint();
    } catch (RuntimeException e) {
      log.warn("job-wide checkpoint not proposed, retrying at the next tick: {}", e.toString());
    }
  }

  /**
   * Graceful shutdown (phase {@link LifecyclePhases#ROLE}, after the gRPC server drained its
   * calls): stops taking pushes and writes a final checkpoint.
   */
  @Override
  public void stop() {
    stopTimer();
    running = false;
    shard.beginDraining();
    try {
      checkpointNow()
          .ifPresent(m -> log.info("final checkpoint at step {}: {}", m.getStep(), m.getPath()));
    } catch (RuntimeException e) {
      log.error("final checkpoint of pserver {} failed", shard.index(), e);
    }
    if (job != null) {
      job.close();
    }
    if (wal != null) {
      wal.close();
    }
  }

  @Override
  public int getPhase() {
    return LifecyclePhases.ROLE;
  }

  /** The newest checkpoint written or loaded, or null. */
  public LastCheckpoint last() {
    return last;
  }

  /**
   * Seconds since the newest checkpoint was written or loaded; before the first one, seconds since
   * the shard was initialised (how long its content has gone without a checkpoint, so an alert on
   * the age fires even when no checkpoint is ever written); NaN while the shard holds nothing.
   */
  public double ageSeconds(long nowMs) {
    LastCheckpoint l = last;
    if (l != null) {
      return (nowMs - l.timestampMs()) / 1000.0;
    }
    long since = shard.initialised() ? shard.initialisedAtMs() : -1;
    return since < 0 ? Double.NaN : Math.max(0, nowMs - since) / 1000.0;
  }

  /**
   * Seconds the newest checkpoint took to write (0 for a loaded one, and 0 from the shard's
   * initialisation until its first checkpoint); NaN while the shard holds nothing.
   */
  public double lastWriteSeconds() {
    LastCheckpoint l = last;
    if (l != null) {
      return l.writeSeconds();
    }
    return shard.initialised() ? 0 : Double.NaN;
  }

  @Override
  public synchronized void start() {
    running = true;
    if (interval.isZero() || interval.isNegative() || timer != null) {
      return;
    }
    timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "pserver-checkpoint");
              t.setDaemon(true);
              return t;
            });
    long ms = interval.toMillis();
    timer.scheduleWithFixedDelay(this::onTimer, ms, ms, TimeUnit.MILLISECONDS);
  }

  private void stopTimer() {
    ScheduledExecutorService t;
    synchronized (this) {
      t = timer;
      timer = null;
    }
    if (t != null) {
      t.shutdownNow();
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }
}
