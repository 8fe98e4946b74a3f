package dev.paramserver.pserver.registration;

/** Where a pserver's registration in etcd stands. */
public enum RegistrationState {
  /** Waiting for the gRPC server to listen. */
  NEW,
  /** Claiming an index (first time, or again after the lease was lost). */
  REGISTERING,
  /** Holds {@code ps/<index>} under a live lease. */
  REGISTERED,
  /** Shutting down: no new calls, final checkpoint, lease revoked. */
  DRAINING,
  STOPPED;

  boolean canMoveTo(RegistrationState next) {
    return switch (this) {
      case NEW -> next == REGISTERING || next == DRAINING;
      case REGISTERING -> next == REGISTERED || next == DRAINING;
      case REGISTERED -> next == REGISTERING || next == DRAINING;
      case DRAINING -> next == STOPPED;
      case STOPPED -> false;
    };
  }
}
