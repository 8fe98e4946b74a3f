package dev.paramserver.pserver.placement;

import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.pserver.replication.ReplicationClock;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.MoveCounts;
import dev.paramserver.pserver.shard.MovingSlots;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.tensor.SlotMap;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;

/**
 * The one owner of this pserver's view of the job's elastic placement
 * (docs/explanation/elastic.md): follows the committed map in etcd ({@link PlacementStore}: one
 * read when an index is claimed, then its watch) and the move this pserver takes part in, and gives
 * both to the shard, which checks trainers' requests against them. When the map reaches a move's
 * epoch the move is committed: the new owner serves the slots and the old owner drops them; when
 * the move disappears without the epoch advancing it was rolled back: the old owner serves them
 * again and the new owner drops what it staged.
 *
 * <p>Every change is made under this object's monitor, from a fresh read of etcd, so the watch
 * thread and the move services never apply an older read over a newer one. It keeps no copy of what
 * it follows: the shard holds the committed map and the moves in progress ({@link
 * ShardMoves#placement}), this class is their only writer, and the index served is the lifecycle's
 * ({@link ShardLifecycle#index}).
 */
@Component
public final class PlacementFollower implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PlacementFollower.class);

  private final ShardMoves shard;
  private final ShardLifecycle lifecycle;
  private final PlacementStore store;
  private final MoveMetrics metrics;
  private final ScheduledExecutorService timer;

  // Guarded by this: whether an index is followed (follow was called), and the job's number of
  // pservers then (the initial map's, before the first committed placement).
  private boolean following;
  private int desired;
  private AutoCloseable watch;
  private boolean closed;

  @Autowired
  public PlacementFollower(
      Coordinator coordinator, ShardMoves shard, ShardLifecycle lifecycle, MoveMetrics metrics) {
    this(coordinator, shard, lifecycle, metrics, ReplicationClock.SYSTEM);
  }

  /**
   * @param clock the time, waits and timer of moves here (a move's timeout, a trainer's wait for a
   *     move's commit): the process's in a pserver, a simulation's in one
   */
  public PlacementFollower(
      Coordinator coordinator,
      ShardMoves shard,
      ShardLifecycle lifecycle,
      MoveMetrics metrics,
      ReplicationClock clock) {
    this.shard = shard;
    this.lifecycle = lifecycle;
    this.store = new PlacementStore(coordinator);
    this.metrics = metrics;
    this.timer = clock.timer("pserver-move-timeout");
    shard.waitWith(clock);
  }

  /**
   * This pserver serves the lifecycle's index of a job of {@code desired} pservers (its state
   * loaded): reads the committed map, drops what the loaded state holds of slots and blocks that
   * moved away (a restart after a move), and follows the map from now on.
   */
  public void follow(int desired) {
    synchronized (this) {
      if (closed) {
        return;
      }
      int index = lifecycle.index();
      this.following = true;
      this.desired = desired;
      PlacementStore.Read read = abortMoveOfEarlierClaim(index);
      // no move of an earlier claim carries over, nor its map
      apply(read, null, null, null);
      if (read.epoch() > 0) {
        MoveCounts dropped = shard.dropUnowned(shard.placement(), index);
        if (dropped.rows() > 0 || dropped.blocks() > 0) {
          log.info(
              "pserver {} at placement epoch {}: dropped {} rows and {} blocks it no longer owns",
              index,
              read.epoch(),
              dropped.rows(),
              dropped.blocks());
        }
      }
      if (watch == null) {
        watch = store.watch(r -> onWatch());
      }
    }
  }

  /**
   * A move from or to {@code index} in progress when this pserver (re)claims it began under an
   * earlier claim or process (a lease lost and the state reloaded, a restart): what was staged,
   * frozen or tapped for it does not carry over, whatever the shard's memory says now (the reload
   * cleared it). It is rolled back in etcd, fenced to that attempt, and the coordinator makes it
   * again; if the coordinator committed it first, the read that follows says so and the loaded
   * state (the move's durable record replayed) serves it. Never applies a read that is older than
   * the move's outcome.
   */
  private PlacementStore.Read abortMoveOfEarlierClaim(int index) {
    PlacementStore.Read read = store.read();
    Optional<SlotMove> begun = read.move().filter(m -> m.getFrom() == index || m.getTo() == index);
    for (int tries = 0; begun.isPresent() && read.move().equals(begun) && tries < 10; tries++) {
      if (store.abort(read)) {
        log.warn(
            "pserver {} claimed its index during move {} (attempt {}) of an earlier claim: rolled"
                + " it back",
            index,
            begun.get().getId(),
            begun.get().getAttempt());
        metrics.rolledBack();
      }
      read = store.read(); // rolled back, committed by the coordinator, or another attempt
    }
    if (begun.isPresent() && read.move().equals(begun)) {
      throw new CoordinationException(
          "move "
              + begun.get().getId()
              + " of an earlier claim of pserver "
              + index
              + " could not be rolled back in etcd");
    }
    return read;
  }

  private void onWatch() {
    try {
      refresh();
    } catch (RuntimeException e) {
      log.warn("placement change not applied (the next change or move retries): {}", e.toString());
    }
  }

  /** Reads etcd and applies what it says; returns the read. */
  public synchronized PlacementStore.Read refresh() {
    PlacementStore.Read read = store.read();
    apply(read, shard.placement(), shard.outgoing(), shard.incoming());
    return read;
  }

  /**
   * Applies {@code read} over the map and moves the shard serves ({@code current}, {@code
   * outgoingNow}, {@code incomingNow}), publishing each step to the shard before the slots it gives
   * up are dropped.
   */
  private void apply(
      PlacementStore.Read read, SlotMap current, MovingSlots outgoingNow, MovingSlots incomingNow) {
    MovingSlots outgoing = outgoingNow;
    MovingSlots incoming = incomingNow;
    if (!following) {
      return;
    }
    SlotMap next = read.slotMap(SlotMap.initial(List.of(), Math.max(desired, 1)));
    if (current != null && next.epoch() < current.epoch()) {
      return;
    }
    SlotMap map = next;
    int index = lifecycle.index();
    MovingSlots out = outgoing;
    if (out != null && (map.epoch() >= out.epoch() || !inProgress(read, out))) {
      outgoing = null;
      if (map.epoch() >= out.epoch()) {
        shard.setPlacement(map, outgoing, incoming);
        MoveCounts dropped = shard.drop(out);
        metrics.committed(out, "out");
        log.info(
            "{} committed: serving its slots at pserver {}; dropped {} rows and {} blocks",
            out,
            out.to(),
            dropped.rows(),
            dropped.blocks());
      } else {
        log.warn("{} rolled back: pserver {} serves its slots again", out, index);
      }
    }
    MovingSlots in = incoming;
    if (in != null && (map.epoch() >= in.epoch() || !inProgress(read, in))) {
      incoming = null;
      if (map.epoch() >= in.epoch()) {
        metrics.committed(in, "in");
        log.info("{} committed: pserver {} serves its slots", in, index);
      } else {
        shard.setPlacement(map, outgoing, incoming);
        MoveCounts dropped = shard.drop(in);
        log.warn(
            "{} rolled back: dropped the {} rows and {} blocks staged here",
            in,
            dropped.rows(),
            dropped.blocks());
      }
    }
    shard.setPlacement(map, outgoing, incoming);
  }

  /**
   * Whether etcd's move is {@code m}'s attempt: the same move with the same {@code attempt} (a
   * retry begun after a rollback has the same id and epoch, and is another move here).
   */
  private static boolean inProgress(PlacementStore.Read read, MovingSlots m) {
    return read.move().isPresent() && read.move().get().equals(m.move());
  }

  /**
   * Whether etcd's placement still gives {@code index} a part (slots or blocks in the committed
   * map, or the move in progress from or to it): read afresh, for the registration, before this
   * pserver follows any index ({@link PlacementStore.Read#places}).
   */
  public boolean places(int index) {
    return store.read().places(index);
  }

  /** The committed map this pserver follows (null before it serves an index). */
  public synchronized SlotMap map() {
    return shard.placement();
  }

  /** The index served (the lifecycle's), or -1. */
  public int index() {
    return lifecycle.index();
  }

  public synchronized MovingSlots outgoing() {
    return shard.outgoing();
  }

  public synchronized MovingSlots incoming() {
    return shard.incoming();
  }

  /** The lifecycle's serving term (see {@link ShardLifecycle#term}). */
  public long term() {
    return lifecycle.term();
  }

  /** Whether the shard still serves in {@code term}: no lease lost, no state reloaded since. */
  public boolean servesIn(long term) {
    return lifecycle.servesIn(term);
  }

  /**
   * Freezes the moving slots and blocks on the old owner: trainers' requests for them are refused
   * with MOVED naming the new owner and the move's epoch from now on.
   */
  public synchronized void freeze(MovingSlots m) {
    shard.setPlacement(shard.placement(), m, shard.incoming());
  }

  /**
   * The new owner expects {@code m}, one MoveIn stream's (one attempt's): trainers' requests for
   * its slots wait for the commit. An earlier stream of the same epoch (an older attempt, or a
   * stale stream of this one) is superseded: nothing more of it is applied ({@link
   * #whileIncoming}).
   *
   * @return false when another move into this pserver is still in progress
   */
  public synchronized boolean expect(MovingSlots m) {
    MovingSlots incoming = shard.incoming();
    if (incoming != null && incoming.epoch() != m.epoch()) {
      return false;
    }
    shard.setPlacement(shard.placement(), shard.outgoing(), m);
    return true;
  }

  /**
   * Runs {@code step} of the MoveIn stream that expects {@code m} (applying its copy or a record,
   * making it durable) while no other stream can take over: refused when a newer stream superseded
   * it, or the move is over.
   */
  public synchronized void whileIncoming(MovingSlots m, Runnable step) {
    MovingSlots incoming = shard.incoming();
    if (incoming != m) {
      throw MoveRequests.refused(
          m
              + " (attempt "
              + m.move().getAttempt()
              + ") is no longer the move pserver "
              + lifecycle.index()
              + " takes in: "
              + (incoming == null
                  ? "none is"
                  : incoming + " (attempt " + incoming.move().getAttempt() + ") is"));
    }
    step.run();
  }

  /**
   * The new owner's MoveIn stream that expects {@code m} failed: what it staged is dropped, unless
   * a newer stream superseded it (that one's staging is kept).
   */
  public synchronized void incomingFailed(MovingSlots m) {
    if (shard.incoming() == m) {
      shard.setPlacement(shard.placement(), shard.outgoing(), null);
      shard.drop(m);
    }
  }

  /**
   * The old owner rolls {@code m} back itself (its MoveIn failed, or no commit came in time): a
   * fenced delete of the move in etcd, then the slots are served again once the read shows it gone.
   * A move committed meanwhile is committed (the slots are dropped instead).
   */
  public synchronized void rollBack(MovingSlots m, String why) {
    for (int attempt = 0; attempt < 5 && shard.outgoing() == m; attempt++) {
      PlacementStore.Read read = refresh();
      if (shard.outgoing() != m) {
        return;
      }
      if (!inProgress(read, m)) {
        // the move in etcd is another one: this one is over without a commit
        shard.setPlacement(shard.placement(), null, shard.incoming());
        return;
      }
      if (store.abort(read)) {
        log.warn("rolled {} back: {}", m, why);
        metrics.rolledBack();
      }
    }
    if (shard.outgoing() == m) {
      refresh();
    }
  }

  /** Rolls {@code m} back unless it is committed or rolled back within {@code timeout}. */
  public void rollBackAfter(MovingSlots m, Duration timeout) {
    timer.schedule(
        () -> {
          try {
            if (outgoing() == m) {
              rollBack(m, "no commit within paramserver.pserver.move-timeout (" + timeout + ")");
            }
          } catch (RuntimeException e) {
            log.warn("rolling {} back failed: {}", m, e.toString());
          }
        },
        timeout.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    AutoCloseable w;
    synchronized (this) {
      closed = true;
      w = watch;
      watch = null;
    }
    timer.shutdownNow();
    if (w != null) {
      try {
        w.close();
      } catch (Exception e) {
        log.debug("closing the placement watch: {}", e.toString());
      }
    }
  }
}
