package dev.paramserver.serving.replica;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.tensor.SlotMap;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * What a serving replica holds: a copy of every shard of the model, each at a prefix of its
 * primary's applied records, and the version those copies make up.
 *
 * <p>Reads never wait for the change stream. Each shard is held twice: the <em>active</em> copy,
 * which reads use, and a <em>standby</em>, which the stream writes. A record is applied to the
 * standby (first the record the standby still lacks, then the new one); the standby then becomes
 * the active copy in a newly published {@link Cut} (with a new version), and once every read of the
 * previous cut has left, the former active copy is the standby, one record behind. A read enters
 * the cut published when it starts and reads only that cut's copies, which nothing changes while it
 * is in: it sees one version, never a part of a record. The price: twice the memory of the shards,
 * and each record applied twice.
 *
 * <p>Changes (records applied, copies installed) are made one at a time.
 */
public final class ServedModel {
  private final String replica;
  private final Object writes = new Object();
  private final Object published = new Object();
  // Guarded by writes; replaced (longer or shorter) when a placement changes the shard count.
  private ParameterShard[] active;
  private ParameterShard[] standby;
  // the record each standby lacks (the last one applied to its active copy), or null
  private WalRecord[] behind;
  private long[] epochs;
  private long[] sequences;
  // the committed placement map rows and blocks are read by; null: the fixed rule of the count
  private SlotMap placement;
  private long number;
  // the cut the last change replaced: reads may still be in it
  private Cut superseded;
  // Written under writes; read by anyone.
  private volatile Cut cut;

  /** A model of {@code shardCount} shards routed by the fixed rule (the initial map). */
  public ServedModel(String replica, int shardCount) {
    this(replica, shardCount, null);
  }

  /**
   * A model routed by the committed placement map {@code placement} (its pserver count of shards),
   * or, when it is null, of {@code shardCount} shards by the fixed rule.
   */
  public ServedModel(String replica, int shardCount, SlotMap placement) {
    int n = placement == null ? shardCount : placement.pservers();
    if (n < 1) {
      throw new IllegalArgumentException("a model has at least one shard, got " + n);
    }
    this.replica = replica;
    this.placement = placement;
    this.active = new ParameterShard[n];
    this.standby = new ParameterShard[n];
    this.behind = new WalRecord[n];
    this.epochs = new long[n];
    this.sequences = new long[n];
    this.cut = new Cut(null, placement, active.clone(), epochs.clone(), sequences.clone());
    this.superseded = cut;
  }

  /** The number of shards served now (the placement's pserver count). */
  public int shardCount() {
    return cut.shards.length;
  }

  /** The committed placement epoch reads are routed by now (0: the initial map). */
  public long placementEpoch() {
    return Cut.epochOf(cut.placement);
  }

  /** The committed placement map reads are routed by now; null: the fixed rule. */
  public SlotMap placement() {
    return cut.placement;
  }

  /** The replica's instance id, which numbers its versions. */
  public String replica() {
    return replica;
  }

  /** The version served now; null until every shard holds a copy. */
  public ServedVersion version() {
    return cut.version;
  }

  /** Shard {@code index}'s place now (sequence 0 before its first copy). */
  public ServedVersion.Position position(int index) {
    Cut c = cut;
    if (index >= c.shards.length) {
      return new ServedVersion.Position(index, 0, 0);
    }
    return new ServedVersion.Position(index, c.epochs[index], c.sequences[index]);
  }

  /** The initialisation shard {@code index} holds, or "" before its first copy. */
  public String initId(int index) {
    Cut c = Cut.enter(this::published);
    try {
      ParameterShard s = index < c.shards.length ? c.shards[index] : null;
      String id = s == null ? null : s.initId();
      return id == null ? "" : id;
    } finally {
      c.leave();
    }
  }

  /** Replaces shard {@code index} with {@code copy} (a copy cut at {@code copy.step}). */
  public void install(int index, long epoch, ShardCheckpoint copy) {
    ParameterShard a = new ParameterShard(false);
    a.restore(copy);
    ParameterShard b = new ParameterShard(false);
    b.restore(copy);
    synchronized (writes) {
      if (index >= active.length) {
        return;
      }
      superseded.drain();
      active[index] = a;
      standby[index] = b;
      behind[index] = null;
      epochs[index] = epoch;
      sequences[index] = a.step();
      publishLocked();
    }
  }

  /**
   * Replaces every shard at once with {@code loaded} (a job-wide checkpoint or a saved model, each
   * shard restored already), publishing one version: a read sees all of them or none. Their epoch
   * is {@code epoch} (0: not of any primary's stream, so a follower starts from a copy).
   */
  public void installAll(List<ParameterShard> loaded, long epoch) {
    int n = loaded.size();
    ParameterShard[] copies = new ParameterShard[n];
    for (int i = 0; i < n; i++) {
      copies[i] = new ParameterShard(false);
      copies[i].restore(loaded.get(i).snapshot());
    }
    synchronized (writes) {
      if (n != active.length) {
        throw new IllegalArgumentException(
            "a snapshot of " + n + " shards for a model of " + active.length);
      }
      superseded.drain();
      for (int i = 0; i < n; i++) {
        active[i] = loaded.get(i);
        standby[i] = copies[i];
        behind[i] = null;
        epochs[i] = epoch;
        sequences[i] = active[i].step();
      }
      publishLocked();
    }
  }

  /**
   * Applies shard {@code index}'s record {@code sequence} as its primary did.
   *
   * @return false when the record does not follow on what the copy holds (another epoch, a gap, a
   *     record of another initialisation): the shard needs a new copy, and what is served did not
   *     change
   */
  public boolean apply(int index, long epoch, long sequence, WalRecord record) {
    synchronized (writes) {
      // the standby may be the copy the replaced cut named
      if (index >= active.length) {
        return false;
      }
      superseded.drain();
      ParameterShard s = standby[index];
      if (s == null || epochs[index] != epoch || sequence != sequences[index] + 1) {
        return false;
      }
      WalRecord lacking = behind[index];
      behind[index] = null;
      if ((lacking != null && !s.replayReplicated(lacking))
          || !s.replayReplicated(record)
          || s.step() != sequence) {
        // skipped (a push the copy held, or of another initialisation): the copy no longer
        // follows the primary. The active copy keeps serving what it held until the new copy;
        // the standby may hold part of this record, so none is kept.
        standby[index] = null;
        return false;
      }
      ParameterShard former = active[index];
      active[index] = s;
      sequences[index] = sequence;
      publishLocked();
      standby[index] = former;
      behind[index] = record;
      return true;
    }
  }

  /**
   * Routes reads by {@code next} from now on, with the copies {@code copies} installed (by shard
   * index: a copy of each shard that gained slots or blocks, cut after {@code next} was committed),
   * all in one new version: a read sees the old map with the old copies, or the new map with the
   * new ones. The shard count becomes {@code next}'s: shards past it are forgotten, new ones hold
   * their copy.
   *
   * @throws IllegalArgumentException when a shard of {@code next} would hold no copy while the
   *     others do (a new index without a copy)
   */
  public void switchPlacement(SlotMap next, Map<Integer, Copy> copies) {
    int n = next.pservers();
    Map<Integer, ParameterShard[]> restored = new HashMap<>();
    copies.forEach((i, c) -> restored.put(i, c.restoreTwice()));
    synchronized (writes) {
      superseded.drain();
      boolean served = cut.version != null;
      active = Arrays.copyOf(active, n);
      standby = Arrays.copyOf(standby, n);
      behind = Arrays.copyOf(behind, n);
      epochs = Arrays.copyOf(epochs, n);
      sequences = Arrays.copyOf(sequences, n);
      for (Map.Entry<Integer, ParameterShard[]> e : restored.entrySet()) {
        int i = e.getKey();
        if (i >= n) {
          continue;
        }
        Copy c = copies.get(i);
        active[i] = e.getValue()[0];
        standby[i] = e.getValue()[1];
        behind[i] = null;
        epochs[i] = c.feedEpoch();
        sequences[i] = active[i].step();
      }
      if (served) {
        for (int i = 0; i < n; i++) {
          if (active[i] == null) {
            throw new IllegalArgumentException(
                "shard " + i + " of " + next + " holds no copy: cannot route by it");
          }
        }
      }
      placement = next;
      publishLocked();
    }
  }

  /**
   * A copy of one shard taken from its primary's change stream.
   *
   * @param feedEpoch the stream's feed epoch
   * @param checkpoint the copy
   */
  public record Copy(long feedEpoch, ShardCheckpoint checkpoint) {
    ParameterShard[] restoreTwice() {
      ParameterShard a = new ParameterShard(false);
      a.restore(checkpoint);
      ParameterShard b = new ParameterShard(false);
      b.restore(checkpoint);
      return new ParameterShard[] {a, b};
    }
  }

  /**
   * Publishes the writer's state as a new cut. The cut it replaces is {@link #superseded}: once
   * every read of it has left, only the new cut is read, and the copies it does not name may
   * change.
   */
  private void publishLocked() {
    boolean complete = true;
    for (ParameterShard s : active) {
      complete &= s != null;
    }
    ServedVersion v = null;
    if (complete) {
      List<ServedVersion.Position> at = new ArrayList<>(active.length);
      for (int i = 0; i < active.length; i++) {
        at.add(new ServedVersion.Position(i, epochs[i], sequences[i]));
      }
      v = new ServedVersion(++number, at, replica, Cut.epochOf(placement));
    }
    superseded = cut;
    cut = new Cut(v, placement, active.clone(), epochs.clone(), sequences.clone());
    if (v != null) {
      synchronized (published) {
        published.notifyAll();
      }
    }
  }

  private Cut published() {
    return cut;
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
      Cut c = Cut.enter(this::published);
      try {
        ServedVersion v = c.version;
        boolean timeLeft = deadline - System.nanoTime() > 0;
        if (v == null) {
          // a read that may wait also waits for the first copy of every shard
          if (!timeLeft) {
            throw new ServiceException(
                ErrorReason.NOT_INITIALIZED,
                "this serving replica holds no copy of some shard yet: retry shortly");
          }
        } else {
          ServedVersion.Position behindMin = v.behind(min);
          if (behindMin == null) {
            return read.apply(new View(v, c.placement, c.shards));
          }
          if (!timeLeft || behindMin.index() >= v.shards().size()) {
            throw notReached(v, behindMin);
          }
        }
      } finally {
        c.leave();
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
