package dev.paramserver.trainer.pserver;

import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.trainer.coordination.PserverRegistry;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job's elastic placement as the trainer follows it (docs/explanation/elastic.md, "Trainers"):
 * the committed map and the move in progress, from the registry's watch (etcd's {@code placement}
 * keys, or the master's cluster map). Each committed map newer than the layout's routing replaces
 * it. Owned by the {@link PserverDirectory}, which lives as long as the trainer.
 */
final class PlacementWatch implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PlacementWatch.class);

  /** The longest single wait before the placement is read again (a missed watch event). */
  private static final long LOOK_AGAIN_MS = 500;

  private final PserverRegistry registry;
  private final AutoCloseable watch;
  private volatile PlacementStore.Read latest = PserverRegistry.NO_PLACEMENT;
  private volatile ModelLayout layout;

  PlacementWatch(PserverRegistry registry) {
    this.registry = registry;
    this.watch = registry.watchPlacement(this::seen);
    try {
      seen(registry.placement());
    } catch (RuntimeException e) {
      log.warn("cannot read the job's placement yet: {}", e.getMessage());
    }
  }

  /** The placement last seen. */
  PlacementStore.Read latest() {
    return latest;
  }

  /** Routes {@code next} by the committed map from now on (the session's layout). */
  void follow(ModelLayout next) {
    this.layout = next;
    apply(latest);
  }

  private void seen(PlacementStore.Read read) {
    PlacementStore.Read before = latest;
    if (read.epoch() < before.epoch()) {
      return;
    }
    latest = read;
    apply(read);
    synchronized (this) {
      notifyAll();
    }
  }

  private void apply(PlacementStore.Read read) {
    ModelLayout l = layout;
    if (l == null || read.map().isEmpty()) {
      return;
    }
    try {
      l.update(SlotMap.fromProto(read.map().get()));
    } catch (RuntimeException e) {
      log.error("cannot route by placement epoch {}: {}", read.epoch(), e.getMessage());
    }
  }

  /**
   * Waits (at most {@code maxMs}) until the refused request of {@code moved} may be re-split: the
   * layout routes by the epoch it names, or that move was rolled back (no move of that epoch in
   * progress and the committed epoch below it: the old owner serves the slots again). Reads the
   * placement afresh while it waits, in case a watch event was missed.
   *
   * @return true if the wait ended for one of those reasons, false at the time limit
   */
  boolean awaitSettled(Moved moved, long maxMs) throws InterruptedException {
    ModelLayout l = layout;
    if (l == null) {
      throw new IllegalStateException("no layout follows the placement: " + moved);
    }
    long deadline = System.nanoTime() + maxMs * 1_000_000L;
    while (true) {
      if (l.routing().epoch() >= moved.epoch()) {
        return true;
      }
      try {
        seen(registry.placement());
      } catch (RuntimeException e) {
        log.warn("cannot read the job's placement: {}", e.getMessage());
      }
      if (l.routing().epoch() >= moved.epoch()) {
        return true;
      }
      PlacementStore.Read now = latest;
      Optional<SlotMove> move = now.move();
      if (now.epoch() < moved.epoch()
          && (move.isEmpty() || move.get().getEpoch() != moved.epoch())) {
        log.info("{}, but that move was rolled back: routing by epoch {}", moved, now.epoch());
        return true;
      }
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        return false;
      }
      // woken by the next placement change the watch sees
      synchronized (this) {
        if (latest == now) {
          wait(Math.min(left, LOOK_AGAIN_MS));
        }
      }
    }
  }

  @Override
  public void close() {
    try {
      watch.close();
    } catch (Exception e) {
      log.debug("closing the placement watch failed", e);
    }
  }
}
