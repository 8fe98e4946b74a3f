package dev.paramserver.trainer.config;

import dev.paramserver.proto.v1.TrainingMode;

/** How the pservers combine the trainers' gradients ({@code paramserver.trainer.mode}). */
public enum TrainingModeSetting {
  /** Each push is applied as it arrives. */
  ASYNC(TrainingMode.ASYNC),
  /** Every step waits for one gradient of every live trainer, applied once. */
  SYNC(TrainingMode.SYNC),
  /**
   * Pushes are applied as they arrive, but no trainer runs more than {@code
   * paramserver.trainer.staleness} pushes ahead of the slowest live trainer.
   */
  BOUNDED_STALENESS(TrainingMode.BOUNDED_STALENESS);

  private final TrainingMode wire;

  TrainingModeSetting(TrainingMode wire) {
    this.wire = wire;
  }

  public TrainingMode wire() {
    return wire;
  }
}
