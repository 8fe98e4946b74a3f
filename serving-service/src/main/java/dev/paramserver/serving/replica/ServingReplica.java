package dev.paramserver.serving.replica;

import dev.paramserver.proto.v1.ServingSource;
import dev.paramserver.proto.v1.ServingStatus;
import dev.paramserver.proto.v1.ShardFollowStatus;
import dev.paramserver.rpc.Backoff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * A serving replica following a job: one {@link ShardFollower} thread per shard, all applying to
 * one {@link ServedModel}. Started and stopped by the service's lifecycle.
 */
public final class ServingReplica {
  private final ServedModel model;
  private final FollowSource source;
  private final String origin;
  private final List<ShardFollower> followers = new ArrayList<>();
  private final List<Thread> threads = new ArrayList<>();

  public ServingReplica(
      ServedModel model,
      FollowSource source,
      String origin,
      Duration backoffInitial,
      Duration backoffMax,
      LongSupplier clock) {
    this.model = model;
    this.source = source;
    this.origin = origin;
    for (int i = 0; i < model.shardCount(); i++) {
      followers.add(
          new ShardFollower(i, model, source, new Backoff(backoffInitial, backoffMax), clock));
    }
  }

  public ServedModel model() {
    return model;
  }

  /** Starts following every shard. */
  public synchronized void start() {
    if (!threads.isEmpty()) {
      return;
    }
    for (ShardFollower f : followers) {
      Thread t = new Thread(f, "serving-follow-" + f.status().index());
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  /** Stops following; what is held stays served. */
  public synchronized void stop() {
    followers.forEach(ShardFollower::stop);
    threads.forEach(Thread::interrupt);
    source.close();
    for (Thread t : threads) {
      try {
        t.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
    threads.clear();
  }

  public synchronized boolean running() {
    return !threads.isEmpty();
  }

  /** How each shard is followed. */
  public List<ShardFollower.Status> shards() {
    return followers.stream().map(ShardFollower::status).toList();
  }

  /** The job followed. */
  public String origin() {
    return origin;
  }

  /** The wire form of the replica's status. */
  public ServingStatus toProto() {
    ServingStatus.Builder b =
        ServingStatus.newBuilder().setSource(ServingSource.FOLLOWING).setOrigin(origin);
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
