package dev.paramserver.master.console;

/**
 * What one look at a trainer found: its etcd registration and, when it answered, its {@code
 * /admin/status}.
 *
 * @param id the trainer's id ({@code trainers/<id>})
 * @param adminAddress its HTTP address (the registration's value)
 * @param state its state (TRAINING, ...) or UNREACHABLE
 * @param pass the pass it works on
 * @param task the task it holds (-1: none)
 * @param samples samples trained so far
 * @param samplesPerSecond its recent throughput
 * @param loss its recent training loss (null: none yet)
 * @param error why its status could not be read ("" when it could)
 */
record TrainerSample(
    String id,
    String adminAddress,
    String state,
    int pass,
    long task,
    long samples,
    double samplesPerSecond,
    Double loss,
    String error) {

  static TrainerSample unreachable(String id, String adminAddress, String error) {
    return new TrainerSample(id, adminAddress, "UNREACHABLE", -1, -1, 0, 0, null, error);
  }

  boolean reachable() {
    return error.isEmpty();
  }
}
