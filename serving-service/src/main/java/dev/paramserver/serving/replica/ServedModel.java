package dev.paramserver.serving.replica;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.ParameterShard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;

/**
 * What a serving replica holds: a copy of every shard of the model, each at a prefix of its
 * primary's applied records, and the version those copies make up. A copy changes only here, one
 * record or one whole installed copy at a time, under the write lock, and each change publishes a
 * new version; a read runs under the read lock, so it sees one version, never a part of a record.
 */
public final class ServedModel {
  private final String replica;
  private final int shardCount;
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final Object published = new Object();
  // Written under the write lock.
  private final ParameterShard[] shards;
  private final long[] epochs;
  private final long[] sequences;
  private long number;
  private volatile ServedVersion version;

  public ServedModel(String replica, int shardCount) {
    if (shardCount < 1) {
      throw new IllegalArgumentException("a model has at least one shard, got " + shardCount);
    }
    this.replica = replica;
    this.shardCount = shardCount;
    this.shards = new ParameterShard[shardCount];
    this.epochs = new long[shardCount];
    this.sequences = new long[shardCount];
  }

  public int shardCount() {
    return shardCount;
  }

  /** The replica's instance id, which numbers its versions. */
  public String replica() {
    return replica;
  }

  /** The version served now; null until every shard holds a copy. */
  public ServedVersion version() {
    return version;
  }

  /** Shard {@code index}'s place now (sequence 0 before its first copy). */
  public ServedVersion.Position position(int index) {
    lock.readLock().lock();
    try {
      return new ServedVersion.Position(index, epochs[index], sequences[index]);
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The initialisation shard {@code index} holds, or "" before its first copy. */
  public String initId(int index) {
    lock.readLock().lock();
    try {
      ParameterShard s = shards[index];
      String id = s == null ? null : s.initId();
      return id == null ? "" : id;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Replaces shard {@code index} with {@code copy} (a copy cut at {@code copy.step}). */
  public void install(int index, long epoch, ShardCheckpoint copy) {
    ParameterShard s = new ParameterShard(false);
    s.restore(copy);
    lock.writeLock().lock();
    try {
      shards[index] = s;
      epochs[index] = epoch;
      sequences[index] = s.step();
      publishLocked();
    } finally {
      lock.writeLock().unlock();
    }
  }

  /**
   * Replaces every shard at once with {@code loaded} (a job-wide checkpoint or a saved model, each
   * shard restored already), publishing one version: a read sees all of them or none. Their epoch
   * is {@code epoch} (0: not of any primary's stream, so a follower starts from a copy).
   */
  public void installAll(List<ParameterShard> loaded, long epoch) {
    if (loaded.size() != shardCount) {
      throw new IllegalArgumentException(
          "a snapshot of " + loaded.size() + " shards for a model of " + shardCount);
    }
    lock.writeLock().lock();
    try {
      for (int i = 0; i < shardCount; i++) {
        shards[i] = loaded.get(i);
        epochs[i] = epoch;
        sequences[i] = shards[i].step();
      }
      publishLocked();
    } finally {
      lock.writeLock().unlock();
    }
  }

  /**
   * Applies shard {@code index}'s record {@code sequence} as its primary did.
   *
   * @return false when the record does not follow on what the copy holds (another epoch, a gap, a
   *     record of another initialisation): the shard needs a new copy, and nothing was changed
   */
  public boolean apply(int index, long epoch, long sequence, WalRecord record) {
    lock.writeLock().lock();
    try {
      ParameterShard s = shards[index];
      if (s == null || epochs[index] != epoch || sequence != sequences[index] + 1) {
        return false;
      }
      if (!s.replayReplicated(record) || s.step() != sequence) {
        // skipped (a push the copy held, or of another initialisation): the copy no longer
        // follows the primary; it keeps serving what it held until the new copy
        return false;
      }
      sequences[index] = sequence;
      publishLocked();
      return true;
    } finally {
      lock.writeLock().unlock();
    }
  }

  private void publishLocked() {
    for (ParameterShard s : shards) {
      if (s == null) {
        return;
      }
    }
    List<ServedVersion.Position> at = new ArrayList<>(shardCount);
    for (int i = 0; i < shardCount; i++) {
      at.add(new ServedVersion.Position(i, epochs[i], sequences[i]));
    }
    version = new ServedVersion(++number, at, replica);
    synchronized (published) {
      published.notifyAll();
    }
  }

  /**
   * Runs {@code read} on one version at least {@code min}, waiting up to {@code wait} for it.
   *
   * @throws ServiceException NOT_INITIALIZED when some shard still has no copy once the wait is
   *     spent, VERSION_NOT_REACHED when {@code min} is not reached in time
   */
  public <T> T read(ServedVersion.Minimum min, Duration wait, Function<View, T> read) {
    long deadline = System.nanoTime() + wait.toNanos();
    while (true) {
      lock.readLock().lock();
      try {
        ServedVersion v = version;
        boolean timeLeft = deadline - System.nanoTime() > 0;
        if (v == null) {
          // a read that may wait also waits for the first copy of every shard
          if (!timeLeft) {
            throw new ServiceException(
                ErrorReason.NOT_INITIALIZED,
                "this serving replica holds no copy of some shard yet: retry shortly");
          }
        } else {
          ServedVersion.Position behind = v.behind(min);
          if (behind == null) {
            return read.apply(new View(v, shards.clone()));
          }
          if (!timeLeft || behind.index() >= v.shards().size()) {
            throw notReached(v, behind);
          }
        }
      } finally {
        lock.readLock().unlock();
      }
      awaitPublished(deadline);
    }
  }

  private void awaitPublished(long deadline) {
    synchronized (published) {
      long ms = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
      try {
        published.wait(Math.min(ms, 50));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new ServiceException(ErrorReason.SHUTTING_DOWN, "the serving replica is stopping");
      }
    }
  }

  private static ServiceException notReached(ServedVersion v, ServedVersion.Position behind) {
    if (behind.index() < 0) {
      return new ServiceException(
          ErrorReason.VERSION_NOT_REACHED,
          "version " + behind.sequence() + " not reached in time: serving " + v.number(),
          Map.of(
              "shard", "", "wanted", Long.toString(behind.sequence()), "served", "" + v.number()));
    }
    if (behind.index() >= v.shards().size()) {
      return new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "min_version names shard "
              + behind.index()
              + " but the model has "
              + v.shards().size()
              + " shards (0.."
              + (v.shards().size() - 1)
              + ")");
    }
    long served = v.shards().get(behind.index()).sequence();
    return new ServiceException(
        ErrorReason.VERSION_NOT_REACHED,
        "shard "
            + behind.index()
            + " is at sequence "
            + served
            + ", the request asks for at least "
            + behind.sequence()
            + ": not reached in time, retry",
        Map.of(
            "shard",
            Integer.toString(behind.index()),
            "wanted",
            Long.toString(behind.sequence()),
            "served",
            Long.toString(served)));
  }
}
