package dev.paramserver.trainer;

/** The trainer is stopping: a call that was waiting or retrying gives up. */
public final class TrainerStoppedException extends RuntimeException {
  public TrainerStoppedException(String what) {
    super("trainer is stopping; gave up " + what);
  }
}
