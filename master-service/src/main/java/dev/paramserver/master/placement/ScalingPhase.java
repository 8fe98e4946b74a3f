package dev.paramserver.master.placement;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * What the {@link PlacementCoordinator} is doing, with the moves it may make (the {@code phase} of
 * {@code GET /admin/job/scaling} is {@link #describe}'s text):
 *
 * <ul>
 *   <li>{@code IDLE} -> a wait, {@code MOVING}, {@code DRAINING} or {@code FAILED};
 *   <li>{@code WAITING_FOR_REGISTRATION} -> the other wait, {@code MOVING}, {@code IDLE}, {@code
 *       FAILED};
 *   <li>{@code WAITING_FOR_PSERVERS} -> the other wait, {@code MOVING}, {@code DRAINING}, {@code
 *       IDLE}, {@code FAILED};
 *   <li>{@code MOVING} -> a wait, {@code DRAINING}, {@code IDLE}, {@code FAILED};
 *   <li>{@code DRAINING} -> {@code IDLE} or {@code FAILED} only (a drain is the scaling's end);
 *   <li>{@code FAILED} -> any phase but itself (a new run starts over).
 * </ul>
 *
 * A run of the coordinator's loop may stop in any phase (leadership lost, the master closing): it
 * then goes back to {@link #IDLE}, so the next run starts from there or from {@link #FAILED}.
 * Staying in a phase (with a new detail, such as the next pserver waited for) is always allowed.
 */
public enum ScalingPhase {
  /** Nothing to do: the committed placement has the desired pserver count. */
  IDLE("idle"),
  /** A grow waits for a new pserver to register (the detail: its index). */
  WAITING_FOR_REGISTRATION("waiting for pserver %s to register"),
  /** A pserver did not answer (killed, restarting): the moves are planned again. */
  WAITING_FOR_PSERVERS("waiting for the pservers to answer"),
  /** A move of slots from one pserver to another is under way (or was just rolled back). */
  MOVING("moving"),
  /** After a shrink: the emptied pservers drain, then they are asked to shut down (the detail). */
  DRAINING("draining pserver %s"),
  /** The scaling stopped on an error (the view's {@code lastError}); a new run starts over. */
  FAILED("failed");

  private static final Map<ScalingPhase, Set<ScalingPhase>> NEXT =
      Map.of(
          IDLE,
          EnumSet.of(WAITING_FOR_REGISTRATION, WAITING_FOR_PSERVERS, MOVING, DRAINING, FAILED),
          WAITING_FOR_REGISTRATION,
          EnumSet.of(WAITING_FOR_PSERVERS, MOVING, IDLE, FAILED),
          WAITING_FOR_PSERVERS,
          EnumSet.of(WAITING_FOR_REGISTRATION, MOVING, DRAINING, IDLE, FAILED),
          MOVING,
          EnumSet.of(WAITING_FOR_REGISTRATION, WAITING_FOR_PSERVERS, DRAINING, IDLE, FAILED),
          DRAINING,
          EnumSet.of(IDLE, FAILED),
          FAILED,
          EnumSet.of(WAITING_FOR_REGISTRATION, WAITING_FOR_PSERVERS, MOVING, DRAINING, IDLE));

  private final String text;

  ScalingPhase(String text) {
    this.text = text;
  }

  /** True when the coordinator may go from this phase to {@code next}. */
  public boolean canMoveTo(ScalingPhase next) {
    return next == this || NEXT.get(this).contains(next);
  }

  /**
   * {@code next}, checked against the table.
   *
   * @throws IllegalStateException when the table does not allow it, naming both phases
   */
  public ScalingPhase to(ScalingPhase next) {
    if (!canMoveTo(next)) {
      throw new IllegalStateException(
          "the scaling cannot go from "
              + this
              + " to "
              + next
              + "; from "
              + this
              + " it goes to "
              + NEXT.get(this));
    }
    return next;
  }

  /** The console's text of the phase, with {@code detail} (a pserver index or list) filled in. */
  public String describe(String detail) {
    return text.contains("%s") ? String.format(text, detail == null ? "?" : detail) : text;
  }
}
