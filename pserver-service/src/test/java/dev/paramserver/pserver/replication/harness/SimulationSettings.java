package dev.paramserver.pserver.replication.harness;

/** What a run explores: its size, how many faults it meets and when crashed pservers restart. */
record SimulationSettings(
    int trainers,
    int pushes,
    int faults,
    int faultPercent,
    boolean skipOutOfSync,
    Restarts restarts) {

  /** When a crashed pserver restarts on its disk. */
  enum Restarts {
    /** Once etcd expired the crashed process's lease (and the fault's time passed). */
    AFTER_LEASE,
    /** After the fault's time, which may end before etcd expired the lease (a supervisor's). */
    WITHIN_LEASE,
    /** One or the other, drawn from the seed for each crash (the default). */
    DRAWN
  }

  /**
   * The schedules CI runs: crashed pservers restart after their lease or within it, drawn per
   * crash; {@code -Dsimulation.quickRestart=true} (or {@code false}) makes every restart quick (or
   * wait for the lease).
   */
  static SimulationSettings standard() {
    String quick = System.getProperty("simulation.quickRestart");
    Restarts restarts =
        quick == null
            ? Restarts.DRAWN
            : Boolean.parseBoolean(quick) ? Restarts.WITHIN_LEASE : Restarts.AFTER_LEASE;
    return new SimulationSettings(2, 5, 3, 10, false, restarts);
  }

  /** With the injected defect: the out-of-sync record is never written. */
  SimulationSettings skippingOutOfSyncRecords() {
    return new SimulationSettings(trainers, pushes, faults, faultPercent, true, restarts);
  }
}
