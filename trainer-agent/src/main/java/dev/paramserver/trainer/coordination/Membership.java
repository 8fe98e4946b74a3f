package dev.paramserver.trainer.coordination;

/**
 * A trainer's membership of its job, from {@link TrainerCoordination#join}. The job's locks this
 * trainer takes are held under it: they end with it. Closing it leaves the job.
 */
public interface Membership extends AutoCloseable {

  /** The trainer's id in the job. */
  String trainerId();

  /** The job's name (its etcd prefix). */
  String job();

  /** The job's locks, taken for this trainer under this membership. */
  JobLocks locks();

  /** False once the membership was closed or is known to be lost. */
  boolean isAlive();

  /**
   * Runs {@code listener} once if the membership is lost for good (not when it is closed on
   * purpose).
   */
  void onLost(Runnable listener);

  /** Leaves the job; idempotent. */
  @Override
  void close();
}
