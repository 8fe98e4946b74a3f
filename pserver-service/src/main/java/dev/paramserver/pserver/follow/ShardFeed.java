package dev.paramserver.pserver.follow;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.AppliedFeed;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardFeeds;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;

/**
 * The change stream of this pserver's shard for read replicas (ShardFollow): attached to the shard
 * at the first follower, it keeps the last records applied (bounded: {@link #RETAINED_RECORDS},
 * {@link #RETAINED_BYTES}) so that a follower whose stream broke resumes after its last sequence,
 * and hands each record to every follower's bounded queue. The push path only appends to these
 * queues: a follower whose queue is full is cut off ({@link Follower#cutOff}), never waited for.
 *
 * <p>The feed's epoch is drawn anew whenever the shard's history may have changed under its
 * followers: the update count did not follow on (the shard was restored or reset) or a copy is cut
 * at another count than the last record's. A follower resumes only within its epoch.
 */
public final class ShardFeed implements AppliedFeed {
  /** Records kept for followers that resume. */
  public static final int RETAINED_RECORDS = 4096;

  /** Bytes of records kept for followers that resume. */
  public static final long RETAINED_BYTES = 64L << 20;

  /** Records queued for one follower before it is cut off. */
  public static final int QUEUE_RECORDS = 8192;

  /** Bytes queued for one follower before it is cut off. */
  public static final long QUEUE_BYTES = 64L << 20;

  /**
   * One applied record as followers get it, with the committed placement epoch the shard served
   * when it applied it.
   */
  public record Entry(
      long sequence, WalRecord record, long appliedMs, int bytes, long placementEpoch) {}

  private final ParameterShard shard;
  private final LongSupplier clock;
  // Guarded by this.
  private final ArrayDeque<Entry> retained = new ArrayDeque<>();
  private long retainedBytes;
  private long last = -1;
  private long epoch = newEpoch();
  private boolean attached;
  private final List<Follower> followers = new ArrayList<>();

  public ShardFeed(ParameterShard shard, LongSupplier clock) {
    this.shard = shard;
    this.clock = clock;
  }

  @Override
  public synchronized void applied(long sequence, WalRecord record) {
    if (last >= 0 && sequence != last + 1) {
      restart();
    }
    last = sequence;
    Entry e =
        new Entry(
            sequence,
            record,
            clock.getAsLong(),
            record.getSerializedSize(),
            ShardFeeds.placementEpoch(shard));
    retained.addLast(e);
    retainedBytes += e.bytes();
    while (retained.size() > RETAINED_RECORDS || retainedBytes > RETAINED_BYTES) {
      retainedBytes -= retained.removeFirst().bytes();
    }
    for (Follower f : followers) {
      f.offer(e);
    }
    followers.removeIf(Follower::ended);
  }

  /** The epoch of the shard's history the feed numbers now. */
  public synchronized long epoch() {
    return epoch;
  }

  /** Followers attached now. */
  public synchronized int followers() {
    followers.removeIf(Follower::ended);
    return followers.size();
  }

  /**
   * A new follower: it resumes after {@code fromSeq} when {@code epoch} and {@code initId} are this
   * feed's and every record after {@code fromSeq} is still kept; otherwise it starts with a copy of
   * the shard ({@link Follower#copy}), cut under the shard's write lock.
   *
   * @throws ServiceException NOT_INITIALIZED when the shard holds no parameters yet
   * @throws IOException when the copy cannot be written
   */
  public Follower follow(long epoch, long fromSeq, String initId) throws IOException {
    String held = shard.initId();
    if (held == null) {
      throw new ServiceException(
          ErrorReason.NOT_INITIALIZED,
          "shard "
              + shard.index()
              + " is not initialised yet: follow it again once a trainer initialised it");
    }
    synchronized (this) {
      if (!attached) {
        ShardFeeds.attach(shard, this);
        attached = true;
      }
      if (epoch == this.epoch && fromSeq > 0 && held.equals(initId) && keeps(fromSeq)) {
        Follower f = new Follower(this.epoch, fromSeq, null, true);
        for (Entry e : retained) {
          if (e.sequence() > fromSeq) {
            f.offer(e);
          }
        }
        followers.add(f);
        return f;
      }
    }
    ByteArrayOutputStream copy = new ByteArrayOutputStream();
    Follower[] made = new Follower[1];
    boolean initialised =
        ShardFeeds.writeCopy(
            shard,
            copy,
            at -> {
              synchronized (this) {
                if (last >= 0 && last != at) {
                  restart();
                }
                last = at;
                made[0] = new Follower(this.epoch, at, null, false);
                made[0].copyPlacementEpoch = ShardFeeds.placementEpoch(shard);
                followers.add(made[0]);
              }
            });
    Follower f = Objects.requireNonNull(made[0]);
    if (!initialised) {
      f.cutOff();
      throw new ServiceException(
          ErrorReason.NOT_INITIALIZED,
          "shard " + shard.index() + " is not initialised: follow it again shortly");
    }
    f.copy = copy.toByteArray();
    return f;
  }

  /** Detaches a follower that ended. */
  public synchronized void leave(Follower f) {
    f.cutOff();
    followers.remove(f);
  }

  private boolean keeps(long fromSeq) {
    if (fromSeq == last) {
      return true;
    }
    Entry first = retained.peekFirst();
    return first != null && first.sequence() <= fromSeq + 1 && fromSeq < last;
  }

  // Under this: the shard's history changed; followers of the old one stop, none resumes in it.
  private void restart() {
    epoch = newEpoch();
    retained.clear();
    retainedBytes = 0;
    followers.forEach(Follower::cutOff);
    followers.clear();
  }

  private static long newEpoch() {
    return 1 + ThreadLocalRandom.current().nextLong(Long.MAX_VALUE - 1);
  }
}
