package dev.paramserver.pserver.persistence;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.wal.LogEpoch;
import dev.paramserver.pserver.wal.WriteAheadLog;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.service.LifecyclePhases;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import java.time.Duration;
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
  private final CheckpointLoader loader;
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
            new EtcdCheckpointPointers(coordinator.kv(), coordinator.keys()),
            properties.checkpointDir(),
            storage);
    this.interval = properties.checkpointInterval();
    this.coordinator = coordinator;
    this.desired = properties.desired();
    this.job =
        properties.checkpointConsistency() == PserverProperties.CheckpointConsistency.JOB
            ? new JobCheckpoints(shard, coordinator.kv(), coordinator.keys(), store)
            : null;
    this.loader = new CheckpointLoader(shard, store, coordinator, job);
    PserverProperties.Wal w = properties.wal();
    this.wal =
        w.enabled()
            ? new WriteAheadLog(
                w.dir() == null ? properties.localCheckpointDir() : w.dir(),
                w.sync(),
                w.batchInterval())
            : null;
    if (wal != null) {
      shard.events().onInitialised(this::checkpointInitialised);
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
  private void openLog(int index, long fromSegment) {
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
   * Loads the newest state of {@code index} (see {@link CheckpointLoader}) and replays the log
   * after it. A restored job-wide checkpoint sets the log aside instead, and a checkpoint of the
   * restored state is written at once, so that a later restart of this shard alone comes back to it
   * plus what follows.
   */
  @Override
  public void load(int index) {
    CheckpointLoader.Loaded loaded = loadBase(index);
    last = loaded.last();
    openLog(index, loaded.fromSegment(), loaded.replay());
    if (loaded.restoredJob() >= 0) {
      try {
        checkpointNow();
        // a later restart of this shard alone (the job goes on from here) must not restore it
        job.markRestored(loaded.restoredJob(), index);
      } catch (RuntimeException e) {
        log.error("checkpoint of the restored job-wide state of pserver {} failed", index, e);
      }
    }
  }

  /** Attempts at reading a recorded checkpoint the log needs, before the load is refused. */
  static final int LOAD_ATTEMPTS = 3;

  /**
   * The checkpoint the log replays onto. When etcd records a checkpoint but none can be read (an S3
   * timeout, a permission error, a missing or corrupt file) and log segments are on disk, reading
   * is retried; if it still fails the load is refused with an error naming the checkpoint and the
   * log, and the log is kept: starting empty would delete it (a log without its base cannot be
   * replayed), and with it every push acknowledged since that checkpoint.
   *
   * @throws IllegalStateException when no recorded checkpoint could be read for a log that needs
   *     one
   */
  private CheckpointLoader.Loaded loadBase(int index) {
    CheckpointLoader.Loaded loaded = loader.load(index);
    if (loaded.last() != null || wal == null || !wal.hasSegments(index)) {
      return loaded;
    }
    String key = coordinator.keys().checkpoint(index);
    if (coordinator.kv().get(key).isEmpty()) {
      return loaded; // no checkpoint recorded: the segments are of another state
    }
    int[] tried = {1};
    Retry retry =
        new Retry(Duration.ofMillis(500), Duration.ofSeconds(2), () -> tried[0] >= LOAD_ATTEMPTS);
    try {
      return retry.until(
          "reading the checkpoint of pserver " + index,
          attempt -> {
            tried[0]++;
            log.warn(
                "pserver {}: its recorded checkpoint ({}) could not be read: attempt {} of {}",
                index,
                key,
                tried[0],
                LOAD_ATTEMPTS);
            CheckpointLoader.Loaded again = loader.load(index);
            return again.last() != null ? Optional.of(again) : Optional.empty();
          });
    } catch (StoppedException e) {
      // refused below
    }
    throw new IllegalStateException(
        "pserver "
            + index
            + " cannot read the checkpoint etcd records for it ("
            + key
            + "; see the errors above) after "
            + LOAD_ATTEMPTS
            + " attempts, and its write-ahead log in "
            + wal.dir()
            + " needs it as a base: it does not start empty, which would delete the log and the"
            + " pushes acknowledged since that checkpoint. Make the checkpoint readable (storage,"
            + " permissions) and the claim is tried again");
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
   * The state the shard holds in memory becomes that of {@code index} (a backup taking over its
   * shard): the log of {@code index} starts afresh (segments this process kept from an earlier life
   * are deleted, they describe another state). {@link #checkpoint} once the shard carries the index
   * writes the base the new log replays onto.
   */
  @Override
  public void startLog(int index) {
    last = null;
    openLog(index, 0);
  }

  @Override
  public void checkpoint() {
    checkpointNow();
  }

  @Override
  public void logEpoch(int index, long epoch) {
    if (wal != null) {
      try {
        LogEpoch.write(wal.dir(), index, epoch);
      } catch (java.io.UncheckedIOException e) {
        log.warn(
            "cannot record the epoch of the log of shard {} (a restart will not claim it back): {}",
            index,
            e.getMessage());
      }
    }
  }

  @Override
  public void onStorageFailure(java.util.function.Consumer<String> listener) {
    if (wal != null) {
      wal.onFailure(listener);
    }
  }

  @Override
  public long loggedEpoch(int index) {
    return wal == null ? 0 : LogEpoch.read(wal.dir(), index);
  }

  @Override
  public synchronized void discardLog(int index) {
    if (wal != null) {
      wal.setAside(index);
      wal.open(index, 0, record -> false);
      lastCut = 0;
    }
    last = null;
  }

  /** Streams a checkpoint into {@code shard}: see {@link CheckpointStore#restorer}. */
  public static CheckpointStore.Restorer restorer(ParameterShard shard) {
    return CheckpointStore.restorer(shard);
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
   * Graceful shutdown (phase {@link LifecyclePhases#ROLE}, after the gRPC server drained its calls,
   * which the role lifecycle stopped taking at the start of the shutdown): writes a final
   * checkpoint.
   */
  @Override
  public void stop() {
    stopTimer();
    running = false;
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
