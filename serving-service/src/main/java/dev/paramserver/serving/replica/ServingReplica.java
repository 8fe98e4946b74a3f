package dev.paramserver.serving.replica;

import dev.paramserver.proto.v1.ServingSource;
import dev.paramserver.proto.v1.ServingStatus;
import dev.paramserver.proto.v1.ShardFollowStatus;
import dev.paramserver.rpc.Backoff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A serving replica: at start it serves the newest snapshot its {@link SnapshotSource} has (a
 * job-wide checkpoint, or a saved model file), then, when it follows a job, one {@link
 * ShardFollower} thread per shard applies the primaries' streams to the same {@link ServedModel},
 * and a {@link PlacementSwitch} moves it to each newer committed placement map of the job. It may
 * be pinned to a job-wide checkpoint ({@link #pin}): the followers stop and that checkpoint is
 * served until {@link #unpin}. Started and stopped by the service's lifecycle.
 */
public final class ServingReplica {
  private static final Logger log = LoggerFactory.getLogger(ServingReplica.class);

  private final ServedModel model;
  private final FollowSource source;
  private final SnapshotSource snapshots;
  private final String origin;
  private final boolean follows;
  private final Duration backoffInitial;
  private final Duration backoffMax;
  private final LongSupplier clock;
  private final PlacementSwitch placements;
  // Guarded by this.
  private final List<ShardFollower> followers = new ArrayList<>();
  private final List<Thread> threads = new ArrayList<>();
  private boolean started;
  private volatile long pinned;
  private volatile String loadedFrom = "";
  private Thread starter;
  private AutoCloseable placementWatch;

  /** A replica that follows {@code source} without snapshots. */
  public ServingReplica(
      ServedModel model,
      FollowSource source,
      String origin,
      Duration backoffInitial,
      Duration backoffMax,
      LongSupplier clock) {
    this(model, source, SnapshotSource.NONE, origin, backoffInitial, backoffMax, clock);
  }

  /**
   * @param source the primaries' streams, or null to follow none (a saved model file)
   * @param origin the job followed, or the model file served
   */
  public ServingReplica(
      ServedModel model,
      FollowSource source,
      SnapshotSource snapshots,
      String origin,
      Duration backoffInitial,
      Duration backoffMax,
      LongSupplier clock) {
    this(
        model, source, snapshots, PlacementSwitch.FIXED, origin, backoffInitial, backoffMax, clock);
  }

  /**
   * @param source the primaries' streams, or null to follow none (a saved model file)
   * @param placement the job's committed placement map, followed across slot moves
   * @param origin the job followed, or the model file served
   */
  public ServingReplica(
      ServedModel model,
      FollowSource source,
      SnapshotSource snapshots,
      PlacementSwitch.Source placement,
      String origin,
      Duration backoffInitial,
      Duration backoffMax,
      LongSupplier clock) {
    this.model = model;
    this.source = source;
    this.snapshots = snapshots;
    this.origin = origin;
    this.follows = source != null;
    this.backoffInitial = backoffInitial;
    this.backoffMax = backoffMax;
    this.clock = clock;
    this.placements = new PlacementSwitch(model, placement, this::followShards);
    for (int i = 0; i < model.shardCount(); i++) {
      followers.add(newFollower(i));
    }
  }

  private ShardFollower newFollower(int index) {
    return new ShardFollower(
        index, model, source, new Backoff(backoffInitial, backoffMax), clock, placements);
  }

  public ServedModel model() {
    return model;
  }

  /**
   * Loads the newest snapshot, then follows every shard, on a thread of its own (the context starts
   * meanwhile; reads wait or answer NOT_INITIALIZED until a version is served).
   */
  public synchronized void start() {
    if (started) {
      return;
    }
    started = true;
    starter =
        new Thread(
            () -> {
              loadLatest();
              synchronized (this) {
                if (started && pinned == 0) {
                  startFollowersLocked();
                }
                if (started && follows && placementWatch == null) {
                  placementWatch = placements.watch();
                }
              }
            },
            "serving-start");
    starter.setDaemon(true);
    starter.start();
  }

  private void loadLatest() {
    if (model.placementEpoch() > 0) {
      // a checkpoint's shards hold what the map of its time gave them, which may not be this one
      log.info(
          "the job's placement changed (epoch {}): serving once every shard is copied from its"
              + " primary",
          model.placementEpoch());
      return;
    }
    try {
      Optional<Snapshot> s = snapshots.latest(model.shardCount());
      if (s.isEmpty()) {
        log.info("no snapshot to start from: serving once every shard is copied from its primary");
        return;
      }
      synchronized (this) {
        if (model.version() != null || pinned != 0) {
          return;
        }
        model.installAll(s.get().shards(), 0);
        loadedFrom = s.get().origin();
      }
      log.info("serving {} ({})", s.get().origin(), model.version());
    } catch (RuntimeException e) {
      log.warn("the newest snapshot cannot be loaded: following the primaries only", e);
    }
  }

  private void startFollowersLocked() {
    if (!follows || !threads.isEmpty()) {
      return;
    }
    followers.clear();
    for (int i = 0; i < model.shardCount(); i++) {
      // a follower stopped before starts afresh (its stream's epoch is not what is served now)
      startFollowerLocked(i);
    }
  }

  private void startFollowerLocked(int i) {
    ShardFollower f = newFollower(i);
    followers.add(f);
    Thread t = new Thread(f, "serving-follow-" + i);
    t.setDaemon(true);
    threads.add(t);
    t.start();
  }

  /**
   * Follows shards 0 .. {@code n - 1} (a placement of more pservers is prepared, or one of fewer is
   * served); nothing while the followers are stopped.
   */
  private synchronized void followShards(int n) {
    if (!started || pinned != 0 || threads.isEmpty()) {
      return;
    }
    while (followers.size() < n) {
      startFollowerLocked(followers.size());
    }
    while (followers.size() > n) {
      int last = followers.size() - 1;
      followers.remove(last).stop();
      threads.remove(last).interrupt();
      log.info("shard {} is no longer in the placement served: not followed any more", last);
    }
  }

  private void stopFollowersLocked() {
    followers.forEach(ShardFollower::stop);
    threads.forEach(Thread::interrupt);
    if (source != null) {
      source.close();
    }
    for (Thread t : threads) {
      try {
        t.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    threads.clear();
  }

  /** Stops following; what is held stays served. */
  public synchronized void stop() {
    started = false;
    if (starter != null) {
      starter.interrupt();
    }
    if (placementWatch != null) {
      try {
        placementWatch.close();
      } catch (Exception e) {
        log.debug("closing the placement watch failed", e);
      }
      placementWatch = null;
    }
    stopFollowersLocked();
  }

  public synchronized boolean running() {
    return started;
  }

  /**
   * Serves job-wide checkpoint {@code id} (a rollback when it is older than what is served) and
   * stops following until {@link #unpin}. Version numbers still grow; each shard's sequence is the
   * checkpoint's step, with epoch 0.
   *
   * @return the version now served
   * @throws java.util.NoSuchElementException when {@code id} is not a complete checkpoint of this
   *     model
   * @throws IllegalStateException when the replica serves a model file
   */
  public synchronized ServedVersion pin(long id) {
    if (!follows) {
      throw new IllegalStateException(
          "this replica serves the model file " + origin + ", not a job's checkpoints");
    }
    if (model.placementEpoch() > 0) {
      throw new IllegalStateException(
          "job "
              + origin
              + " was scaled (placement epoch "
              + model.placementEpoch()
              + "): pinning a checkpoint of a scaled job is not supported yet");
    }
    Snapshot s = snapshots.checkpoint(id, model.shardCount());
    stopFollowersLocked();
    model.installAll(s.shards(), 0);
    pinned = id;
    loadedFrom = s.origin();
    return model.version();
  }

  /**
   * Follows the primaries again (each shard from a copy); nothing when not pinned.
   *
   * @return the checkpoint id that was pinned, 0 when none
   */
  public synchronized long unpin() {
    long was = pinned;
    pinned = 0;
    if (was != 0 && started) {
      startFollowersLocked();
    }
    return was;
  }

  /** The job-wide checkpoint pinned, 0 when none. */
  public long pinned() {
    return pinned;
  }

  /** The snapshot last loaded whole (a checkpoint or a model file), "" when none. */
  public String loadedFrom() {
    return loadedFrom;
  }

  /** How each shard is followed. */
  public synchronized List<ShardFollower.Status> shards() {
    return followers.stream().map(ShardFollower::status).toList();
  }

  /** The job followed, or the model file served. */
  public String origin() {
    return origin;
  }

  /** Where the served values come from. */
  public ServingSource source() {
    if (!follows) {
      return ServingSource.MODEL_FILE;
    }
    return pinned != 0 ? ServingSource.PINNED : ServingSource.FOLLOWING;
  }

  /** The wire form of the replica's status. */
  public ServingStatus toProto() {
    ServingStatus.Builder b =
        ServingStatus.newBuilder().setSource(source()).setOrigin(origin).setPinned(pinned);
    ServedVersion v = model.version();
    if (v != null) {
      b.setVersion(v.toProto());
    }
    for (ShardFollower.Status s : shards()) {
      b.addShards(
          ShardFollowStatus.newBuilder()
              .setIndex(s.index())
              .setPrimary(s.primary())
              .setEpoch(s.epoch())
              .setSequence(s.sequence())
              .setLagMs(s.lagMs())
              .setConnected(s.connected())
              .setCopies(s.copies()));
    }
    return b.build();
  }
}
