package dev.paramserver.pserver.replication.harness;

/** What a run explores: its size and how many faults it meets. */
record SimulationSettings(
    int trainers,
    int pushes,
    int faults,
    int faultPercent,
    boolean skipOutOfSync,
    boolean quickRestart) {
  static SimulationSettings standard() {
    return new SimulationSettings(
        2, 5, 3, 10, false, Boolean.getBoolean("simulation.quickRestart"));
  }

  /** With the injected defect: the out-of-sync record is never written. */
  SimulationSettings skippingOutOfSyncRecords() {
    return new SimulationSettings(trainers, pushes, faults, faultPercent, true, quickRestart);
  }
}
