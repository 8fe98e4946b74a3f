package dev.paramserver.pserver.shard;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.tensor.SlotMap;

/**
 * Whether the shard answers calls and the sparse rows it takes under the index it carries ({@link
 * RowOwnership}). The role lifecycle sets them through {@link ParameterShard}; the shard only reads
 * them. The index itself is the {@link IndexHolder}'s (the lifecycle's): the gate asks it.
 */
final class CallGate {
  private volatile String held;
  private volatile boolean draining;
  // Where the index the shard carries is read (the role lifecycle; before it is set: none).
  private volatile IndexHolder indexHolder = () -> -1;
  // The job's number of pservers (0: unknown); with the index it gives rowOwnership. Both are
  // written under this gate's monitor, rowOwnership read without it.
  private int pservers;
  // The committed placement (null: the initial map of pservers) and the move this pserver takes
  // part in (elastic placement); written under this gate's monitor.
  private SlotMap placement;
  private MovingSlots outgoing;
  private MovingSlots incoming;
  private volatile RowOwnership rowOwnership = RowOwnership.UNCHECKED;
  // The time and waits of awaitPlacementChange: the process's, or a simulation's.
  private volatile ShardClock clock = new ShardClock() {};

  void hold(String why) {
    this.held = why;
  }

  void release() {
    this.held = null;
  }

  void drain() {
    draining = true;
  }

  /** The index is {@code holder}'s from now on, or it changed: the rows owned are worked out. */
  synchronized void indexFrom(IndexHolder holder) {
    this.indexHolder = holder;
    update();
  }

  synchronized void setPservers(int pservers) {
    this.pservers = pservers;
    update();
  }

  /** Sets the placement and the move in progress (see {@link RowOwnership}) at once. */
  synchronized void setPlacement(SlotMap map, MovingSlots outgoing, MovingSlots incoming) {
    this.placement = map;
    this.outgoing = outgoing;
    this.incoming = incoming;
    update();
  }

  synchronized SlotMap placement() {
    return placement;
  }

  synchronized MovingSlots outgoing() {
    return outgoing;
  }

  synchronized MovingSlots incoming() {
    return incoming;
  }

  private void update() {
    int index = index();
    rowOwnership =
        placement != null
            ? RowOwnership.of(index, placement, outgoing, incoming)
            : RowOwnership.of(index, pservers);
    notifyAll();
  }

  /** Waits for placement changes on {@code clock} from now on (see {@link ShardMoves#waitWith}). */
  void waitWith(ShardClock clock) {
    this.clock = clock;
  }

  /** The clock of this gate's waits. */
  ShardClock clock() {
    return clock;
  }

  /**
   * Waits until the placement or the move in progress changes, or {@code deadlineNanos} ({@link
   * #clock}'s time) passes.
   *
   * @return false when the deadline passed first
   */
  synchronized boolean awaitPlacementChange(RowOwnership seen, long deadlineNanos)
      throws InterruptedException {
    ShardClock c = clock;
    while (rowOwnership == seen) {
      long left = deadlineNanos - c.nanoTime();
      if (left <= 0) {
        return false;
      }
      c.timedWait(this, left);
    }
    return true;
  }

  RowOwnership rowOwnership() {
    return rowOwnership;
  }

  int index() {
    return indexHolder.carriedIndex();
  }

  /** Fails while calls are held; reported as UNAVAILABLE, so that trainers retry. */
  void checkNotHeld() {
    String why = held;
    if (why != null) {
      throw new ServiceException(ErrorReason.SHUTTING_DOWN, why);
    }
  }

  /** Fails unless the shard serves pushes and pulls. */
  void checkServing(boolean initialised) {
    checkNotHeld();
    if (!initialised) {
      int index = index();
      throw new ServiceException(
          ErrorReason.NOT_INITIALIZED,
          "pserver "
              + (index < 0 ? "" : index + " ")
              + "is not initialised: call InitParameters and FinishInit first");
    }
    if (draining) {
      throw new ServiceException(
          ErrorReason.SHUTTING_DOWN,
          "pserver " + index() + " is shutting down: retry on its replacement");
    }
  }
}
