package dev.paramserver.trainer.training;

/** Where the trainer's loop is. */
public enum TrainerState {
  STARTING,
  WAITING_FOR_PSERVERS,
  INITIALISING,
  TRAINING,
  EVALUATING,
  FINISHED,
  FAILED,
  STOPPING,
  STOPPED
}
