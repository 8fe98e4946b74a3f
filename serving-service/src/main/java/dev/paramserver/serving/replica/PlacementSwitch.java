package dev.paramserver.serving.replica;

import dev.paramserver.proto.v1.BlockOwner;
import dev.paramserver.tensor.SlotMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves what a replica serves from one committed placement map to a newer one (serving.md, "Across
 * slot moves"). A slot move reaches no change stream: the new owner installs the moved rows and
 * blocks from the old owner, not from a push. So when the job commits epoch {@code E} newer than
 * the one served, each shard that gained slots or blocks (every shard, when epochs were skipped)
 * takes a new copy of its primary, asked for after the replica saw {@code E} committed, hence cut
 * after the new owner held what moved; the copies are staged, and once every such shard has one
 * they are installed with the map {@code E} in one version ({@link ServedModel#switchPlacement}).
 * Until then the old map and copies stay served, and no record the primaries applied under a newer
 * epoch is applied (the followers wait): a version never mixes the two maps, nor serves part of a
 * push.
 */
public final class PlacementSwitch {
  private static final Logger log = LoggerFactory.getLogger(PlacementSwitch.class);

  /** Where the job's committed placement map is read. */
  public interface Source {
    /**
     * The committed map, empty while none was written (the initial map).
     *
     * @throws RuntimeException when it cannot be read now
     */
    Optional<SlotMap> committed();

    /** Calls {@code onChange} after each change of the committed map; close the result to stop. */
    AutoCloseable watch(Runnable onChange);
  }

  /** No placement to follow (a job whose placement is not read). */
  public static final Source FIXED =
      new Source() {
        @Override
        public Optional<SlotMap> committed() {
          return Optional.empty();
        }

        @Override
        public AutoCloseable watch(Runnable onChange) {
          return () -> {};
        }
      };

  private final ServedModel model;
  private final Source source;
  private final IntConsumer followShards;
  // Guarded by this.
  private SlotMap target;
  private final Set<Integer> wanted = new HashSet<>();
  private final Map<Integer, ServedModel.Copy> staged = new HashMap<>();
  private long known;

  /**
   * @param followShards told the number of shards to follow: the served count and, while a switch
   *     to a map of more pservers is prepared, that map's
   */
  public PlacementSwitch(ServedModel model, Source source, IntConsumer followShards) {
    this.model = model;
    this.source = source;
    this.followShards = followShards;
    this.known = model.placementEpoch();
  }

  /** Follows the committed map until the result is closed. */
  public AutoCloseable watch() {
    AutoCloseable w = source.watch(this::refresh);
    refresh();
    return w;
  }

  /**
   * The newest committed epoch this replica knows: a copy asked for now is cut after every move up
   * to it was committed.
   */
  public synchronized long known() {
    return known;
  }

  /** Whether shard {@code index} must take a copy for the switch in preparation. */
  public synchronized boolean wants(int index) {
    return wanted.contains(index) && !staged.containsKey(index);
  }

  /** The epoch being switched to, else the one served. */
  public synchronized long targetEpoch() {
    return target != null ? target.epoch() : model.placementEpoch();
  }

  /** Reads the committed map; when it is newer than the one served, prepares the switch to it. */
  public void refresh() {
    Optional<SlotMap> read;
    try {
      read = source.committed();
    } catch (RuntimeException e) {
      log.warn("cannot read the job's placement: {}", e.getMessage());
      return;
    }
    if (read.isEmpty()) {
      return;
    }
    SlotMap next = read.get();
    int follow;
    synchronized (this) {
      known = Math.max(known, next.epoch());
      long served = model.placementEpoch();
      if (next.epoch() <= served || (target != null && next.epoch() <= target.epoch())) {
        return;
      }
      target = next;
      wanted.clear();
      staged.clear();
      wanted.addAll(gainers(model.placement(), next));
      follow = Math.max(next.pservers(), model.shardCount());
      notifyAll();
      log.info(
          "placement epoch {} committed (serving {}): new copies of shards {} first",
          next.epoch(),
          served,
          wanted);
    }
    followShards.accept(follow);
  }

  /**
   * The shards of {@code next} that gained slots or blocks since {@code served}; all of them when
   * {@code next} does not follow on {@code served} (epochs skipped: a slot may have left a shard
   * and come back) or the served map is the initial one (its blocks are not known here).
   */
  static Set<Integer> gainers(SlotMap served, SlotMap next) {
    Set<Integer> out = new HashSet<>();
    if (served == null || next.epoch() != served.epoch() + 1 || served.slots() != next.slots()) {
      for (int i = 0; i < next.pservers(); i++) {
        out.add(i);
      }
      return out;
    }
    for (int s = 0; s < next.slots(); s++) {
      if (next.ownerOfSlot(s) != served.ownerOfSlot(s)) {
        out.add(next.ownerOfSlot(s));
      }
    }
    for (BlockOwner b : next.toProto().getDenseOwnersList()) {
      if (served.ownerOfBlock(b.getName(), b.getBlock()) != b.getOwner()) {
        out.add(b.getOwner());
      }
    }
    for (int i = served.pservers(); i < next.pservers(); i++) {
      out.add(i);
    }
    return out;
  }

  /**
   * Offers a copy of shard {@code index}, cut at placement epoch {@code cutAt}, asked for when the
   * newest epoch known was {@code askedAt}. Installs every staged copy with the new map once the
   * last one wanted arrives.
   *
   * @return true when the copy was staged (and perhaps installed); false when it cannot serve the
   *     switch in preparation: take another
   */
  public boolean stage(int index, ServedModel.Copy copy, long cutAt, long askedAt) {
    if (cutAt > targetEpoch()) {
      refresh();
    }
    int follow;
    synchronized (this) {
      if (target == null
          || !wanted.contains(index)
          || cutAt > target.epoch()
          || askedAt < target.epoch()) {
        return false;
      }
      staged.put(index, copy);
      if (!staged.keySet().containsAll(wanted)) {
        return true;
      }
      model.switchPlacement(target, Map.copyOf(staged));
      log.info("serving placement epoch {} ({})", target.epoch(), model.version());
      target = null;
      wanted.clear();
      staged.clear();
      follow = model.shardCount();
      notifyAll();
    }
    followShards.accept(follow);
    return true;
  }

  /**
   * Whether shard {@code index}'s follower may go on: the version served routes by {@code epoch} or
   * later and no copy of the shard is staged, or the shard is asked for a new copy.
   */
  public synchronized boolean settled(int index, long epoch) {
    return wants(index) || (model.placementEpoch() >= epoch && !staged.containsKey(index));
  }

  /** Waits (at most {@code maxMs}) until {@link #settled}. */
  public void awaitSettled(int index, long epoch, long maxMs) throws InterruptedException {
    long deadline = System.nanoTime() + maxMs * 1_000_000L;
    synchronized (this) {
      while (!settled(index, epoch)) {
        long left = (deadline - System.nanoTime()) / 1_000_000L;
        if (left <= 0) {
          return;
        }
        wait(left);
      }
    }
  }
}
