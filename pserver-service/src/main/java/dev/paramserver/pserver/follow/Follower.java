package dev.paramserver.pserver.follow;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One follower of a {@link ShardFeed}: the copy it starts with (unless it resumed) and a bounded
 * queue of the records after it. The push path offers records without waiting; a follower whose
 * queue is full is cut off and must follow again. One thread (the stream's) takes from it.
 */
public final class Follower {
  private final long epoch;
  private final long start;
  private final boolean resumed;
  private final LinkedBlockingQueue<ShardFeed.Entry> queue =
      new LinkedBlockingQueue<>(ShardFeed.QUEUE_RECORDS);
  private final AtomicLong queuedBytes = new AtomicLong();
  private volatile boolean cut;
  private volatile boolean tooSlow;

  /** The copy to send first; null when the follower resumed. Set once, before the stream starts. */
  byte[] copy;

  /** The committed placement epoch the shard served when the copy was cut. Set with the copy. */
  long copyPlacementEpoch;

  Follower(long epoch, long start, byte[] copy, boolean resumed) {
    this.epoch = epoch;
    this.start = start;
    this.copy = copy;
    this.resumed = resumed;
  }

  /** The feed epoch the follower's records are numbered in. */
  public long epoch() {
    return epoch;
  }

  /** The sequence of the copy, or the one the follower resumed after. */
  public long start() {
    return start;
  }

  public boolean resumed() {
    return resumed;
  }

  /** The copy to send first (a ShardCheckpoint's bytes), or null when the follower resumed. */
  public byte[] copy() {
    return copy;
  }

  /** The committed placement epoch of the copy ({@link #copy}): the map whose slots it holds. */
  public long copyPlacementEpoch() {
    return copyPlacementEpoch;
  }

  // Under the feed's lock, on the push path: never waits.
  void offer(ShardFeed.Entry e) {
    if (cut) {
      return;
    }
    if (queuedBytes.get() + e.bytes() > ShardFeed.QUEUE_BYTES || !queue.offer(e)) {
      tooSlow = true;
      cutOff();
      return;
    }
    queuedBytes.addAndGet(e.bytes());
  }

  /** Stops the follower: it takes nothing more. */
  void cutOff() {
    cut = true;
  }

  boolean ended() {
    return cut;
  }

  /** True when the follower was cut off because its queue was full. */
  public boolean tooSlow() {
    return tooSlow;
  }

  /** True once the follower was cut off (too slow, the shard's history changed, it left). */
  public boolean isCut() {
    return cut;
  }

  /**
   * The next record, waiting at most {@code timeoutMs}; null when there is none yet (or the
   * follower is cut off: see {@link #isCut}).
   */
  public ShardFeed.Entry next(long timeoutMs) throws InterruptedException {
    if (cut) {
      return null;
    }
    ShardFeed.Entry e = queue.poll(timeoutMs, TimeUnit.MILLISECONDS);
    if (e != null) {
      queuedBytes.addAndGet(-e.bytes());
    }
    return e;
  }

  /** Records queued, not yet taken. */
  public int queued() {
    return queue.size();
  }
}
