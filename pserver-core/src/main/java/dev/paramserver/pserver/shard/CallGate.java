package dev.paramserver.pserver.shard;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.tensor.SlotMap;

/**
 * Whether the shard answers calls, the index it carries (for messages and checkpoints) and the
 * sparse rows it takes under that index ({@link RowOwnership}). The role lifecycle sets them
 * through {@link ParameterShard}; the shard only reads them.
 */
final class CallGate {
  private volatile String held;
  private volatile boolean draining;
  private volatile int index = -1;
  // The job's number of pservers (0: unknown); with index it gives rowOwnership. Both are written
  // under this gate's monitor, rowOwnership read without it.
  private int pservers;
  // The committed placement (null: the initial map of pservers) and the move this pserver takes
  // part in (elastic placement); written under this gate's monitor.
  private SlotMap placement;
  private MovingSlots outgoing;
  private MovingSlots incoming;
  private volatile RowOwnership rowOwnership = RowOwnership.UNCHECKED;

  void hold(String why) {
    this.held = why;
  }

  void release() {
    this.held = null;
  }

  void drain() {
    draining = true;
  }

  synchronized void setIndex(int index) {
    this.index = index;
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
    rowOwnership =
        placement != null
            ? RowOwnership.of(index, placement, outgoing, incoming)
            : RowOwnership.of(index, pservers);
    notifyAll();
  }

  /**
   * Waits until the placement or the move in progress changes, or {@code deadlineNanos} ({@link
   * System#nanoTime}) passes.
   *
   * @return false when the deadline passed first
   */
  synchronized boolean awaitPlacementChange(RowOwnership seen, long deadlineNanos)
      throws InterruptedException {
    while (rowOwnership == seen) {
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
    }
    return true;
  }

  RowOwnership rowOwnership() {
    return rowOwnership;
  }

  int index() {
    return index;
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
      throw new ServiceException(
          ErrorReason.NOT_INITIALIZED,
          "pserver "
              + (index < 0 ? "" : index + " ")
              + "is not initialised: call InitParameters and FinishInit first");
    }
    if (draining) {
      throw new ServiceException(
          ErrorReason.SHUTTING_DOWN,
          "pserver " + index + " is shutting down: retry on its replacement");
    }
  }
}
