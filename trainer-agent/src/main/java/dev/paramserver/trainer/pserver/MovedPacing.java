package dev.paramserver.trainer.pserver;

import dev.paramserver.rpc.Backoff;

/**
 * Paces the resends of one request refused with MOVED (its pieces share it). A refusal naming a
 * newer placement epoch than the one before is progress: the next move of a chain (a grow or shrink
 * moves slots in several moves, one epoch each, and a piece re-split by one epoch may meet the next
 * move) is resent as soon as the trainer routes by it, without a pause. A refusal naming the same
 * epoch again, or an older one (a pserver that has not yet seen a rollback, or one that names no
 * epoch), waits the backoff's next pause first, so a placement that does not settle is never spun
 * on.
 */
final class MovedPacing {
  private final Backoff backoff;
  private long refusedEpoch = Long.MIN_VALUE;

  MovedPacing(Backoff backoff) {
    this.backoff = backoff;
  }

  /** Takes refusal {@code moved} in; true if its resend must first wait {@link #pause}. */
  boolean refusedAgain(Moved moved) {
    boolean again = moved.epoch() <= refusedEpoch;
    refusedEpoch = Math.max(refusedEpoch, moved.epoch());
    return again;
  }

  /** Waits the backoff's next pause (longer each time until {@link #reset}). */
  void pause() throws InterruptedException {
    backoff.pause();
  }
}
