package dev.paramserver.trainer.coordination;

import java.util.Optional;

/**
 * The job's locks, each held by one trainer at a time under its membership (a trainer that dies
 * releases them). Each call is one attempt: a lock held by another trainer is not waited for here;
 * callers that must have it retry in their own loop.
 */
public interface JobLocks {

  /**
   * Takes the lock of the one trainer that initialises the pservers ({@code init_ps/lock}).
   *
   * @return the lock, or empty while another trainer holds it (or it cannot be taken now)
   */
  Optional<InitLock> tryInitialisation();

  /**
   * Takes the lock of the one trainer that writes the final model ({@code export/lock}); never
   * released (it ends with the membership).
   *
   * @return whether this trainer holds it
   */
  boolean claimExport();

  /**
   * Claims the evaluation of pass {@code pass} ({@code eval/<pass>}); never released.
   *
   * @return whether this trainer evaluates it: it claimed it now or held it already (the same id,
   *     restarted)
   */
  boolean claimEvaluation(int pass);

  /** The initialisation lock, held; closing it releases it. */
  interface InitLock extends AutoCloseable {
    /** The id of an initialisation finished before ({@code init_ps/done}), to reuse, if any. */
    Optional<String> previousInitId();

    /** Records the initialisation {@code initId} done; called before the lock is closed. */
    void done(String initId);

    /** Releases the lock (after recording the initialisation done, if {@link #done} was called). */
    @Override
    void close();
  }
}
