package dev.paramserver.pserver.shard;

import dev.paramserver.tensor.SlotMap;
import java.io.IOException;
import java.io.OutputStream;
import java.util.function.LongConsumer;

/**
 * Attaches the change stream of a shard ({@link AppliedFeed}) and cuts copies for its followers.
 */
public final class ShardFeeds {
  private ShardFeeds() {}

  /** Hands every record the shard applies from now on to {@code feed} (null: none). */
  public static void attach(ParameterShard shard, AppliedFeed feed) {
    shard.pushes.attachFeed(feed);
  }

  /**
   * Writes a copy of the whole shard (as a checkpoint file holds it) under its write lock and runs
   * {@code atCut} with the copy's update count, still under the lock: the copy holds every record
   * applied before and none after, so a follower registered in {@code atCut} gets exactly the
   * records after the copy.
   *
   * @return false (nothing written, {@code atCut} run all the same) when the shard is not
   *     initialised
   */
  public static boolean writeCopy(ParameterShard shard, OutputStream out, LongConsumer atCut)
      throws IOException {
    return shard.writeCopy(out, () -> atCut.accept(shard.step()));
  }

  /**
   * The committed placement epoch the shard serves now (0: the initial map). Read under the shard's
   * order lock or write lock, it tells a follower which map a record or copy belongs to: the
   * placement follower changes it before it drops what moved away.
   */
  public static long placementEpoch(ParameterShard shard) {
    SlotMap p = shard.gate().placement();
    return p == null ? 0 : p.epoch();
  }
}
