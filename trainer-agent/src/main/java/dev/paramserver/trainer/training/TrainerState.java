package dev.paramserver.trainer.training;

import java.util.EnumSet;
import java.util.Set;

/** Where a trainer's session is, and the moves allowed from each state. */
public enum TrainerState {
  STARTING,
  WAITING_FOR_PSERVERS,
  INITIALISING,
  TRAINING,
  EVALUATING,
  FINISHED,
  FAILED,
  STOPPING,
  STOPPED;

  /** Whether a session in this state may move to {@code next}. */
  public boolean canMoveTo(TrainerState next) {
    return next(this).contains(next);
  }

  private static Set<TrainerState> next(TrainerState s) {
    return switch (s) {
      case STARTING -> EnumSet.of(WAITING_FOR_PSERVERS, FAILED, STOPPING);
      case WAITING_FOR_PSERVERS -> EnumSet.of(INITIALISING, FAILED, STOPPING);
      case INITIALISING -> EnumSet.of(TRAINING, FAILED, STOPPING);
      case TRAINING -> EnumSet.of(EVALUATING, FINISHED, FAILED, STOPPING);
      case EVALUATING -> EnumSet.of(TRAINING, FINISHED, FAILED, STOPPING);
      case STOPPING -> EnumSet.of(STOPPED, FAILED);
      case FINISHED, FAILED, STOPPED -> EnumSet.noneOf(TrainerState.class);
    };
  }

  /** The session is over. */
  public boolean isFinal() {
    return next(this).isEmpty();
  }
}
