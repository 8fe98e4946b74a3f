package dev.paramserver.trainer.coordination;

/**
 * How a trainer coordinates with the rest of its job: its membership (and the job's locks held
 * under it), where the leading master is, and where the pservers are. Two implementations: {@link
 * EtcdTrainerCoordination} talks to etcd itself (the keys of docs/design.md §1), {@link
 * MasterTrainerCoordination} asks the leading master's {@code paramserver.v1.Coordination} service,
 * which keeps the same etcd keys on the trainer's behalf; the rest of the trainer sees no
 * difference. Chosen by {@code paramserver.trainer.coordination.mode}.
 */
public interface TrainerCoordination extends AutoCloseable {

  /**
   * Joins the job: the trainer counts as a member (for sync mode, the console, the pservers) until
   * the returned membership is closed or lost. Blocks until joined, retrying while the job's
   * coordination is unreachable; fails at once when the job refuses the trainer (another model, a
   * taken id).
   *
   * @throws dev.paramserver.rpc.StoppedException when the trainer stops before it joined
   */
  Membership join(JoinDetails details);

  /** Where the leading master is, for the trainer's calls to the Master service. */
  MasterLocator masters();

  /** The job's pservers. */
  PserverRegistry pservers();

  /** Stops watching and closes connections; memberships must be closed first. */
  @Override
  void close();
}
