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
 * @param tasksDone the tasks it trained and reported finished (-1: unknown)
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
    long tasksDone,
    long samples,
    double samplesPerSecond,
    Double loss,
    String error) {

  /** The state of a trainer that joined through the master and has no admin endpoint. */
  static final String COORDINATED = "JOINED_VIA_MASTER";

  static TrainerSample unreachable(String id, String adminAddress, String error) {
    return new TrainerSample(id, adminAddress, "UNREACHABLE", -1, -1, -1, 0, 0, null, error);
  }

  /**
   * A trainer that joined through the master's Coordination service with no admin endpoint (its
   * registration is {@code host:0}): a member, with no status to read.
   */
  static TrainerSample coordinated(String id, String registration) {
    return new TrainerSample(id, registration, COORDINATED, -1, -1, -1, 0, 0, null, "");
  }

  /** True for a registration {@code host:0}: the trainer has no admin endpoint to probe. */
  static boolean hasNoAdminEndpoint(String registration) {
    return registration.endsWith(":0");
  }

  boolean reachable() {
    return error.isEmpty();
  }

  /** Whether the trainer reported its status (its rate and loss mean something). */
  boolean reportsStatus() {
    return reachable() && !COORDINATED.equals(state);
  }
}
