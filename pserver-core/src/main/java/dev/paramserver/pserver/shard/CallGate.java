package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.rpc.ServiceException;

/**
 * Whether the shard answers calls, and the index it carries (for messages and checkpoints). The
 * role lifecycle sets both through {@link ParameterShard}; the shard only reads them.
 */
final class CallGate {
  private volatile String held;
  private volatile boolean draining;
  private volatile int index = -1;

  void hold(String why) {
    this.held = why;
  }

  void release() {
    this.held = null;
  }

  void drain() {
    draining = true;
  }

  void setIndex(int index) {
    this.index = index;
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
