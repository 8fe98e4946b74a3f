package dev.paramserver.etcd;

import java.time.Duration;
import java.util.Optional;

/** An election under one key: at most one candidate leads at a time. */
public interface LeaderElection {

  /**
   * Campaigns with {@code value} under the lease and waits up to {@code timeout} to become the
   * leader.
   *
   * @return the leadership won, or empty if the timeout passed first (the candidacy is withdrawn)
   * @throws CoordinationException if etcd fails or times out, or the lease is or becomes revoked or
   *     lost while waiting (the candidacy is withdrawn where etcd allows)
   * @throws InterruptedException if interrupted while waiting (the candidacy is withdrawn)
   */
  Optional<Leadership> campaign(byte[] value, Lease lease, Duration timeout)
      throws InterruptedException;

  /** The current leader's value, if there is a leader. */
  Optional<byte[]> leader();

  /** Leadership held by this process. */
  interface Leadership {
    /** The key that stands for the leadership; use it to fence writes. */
    String key();

    /** The create revision of {@link #key()}; fenced writes compare it. */
    long createRevision();

    /** True while the key still exists with that revision (asks etcd). */
    boolean isStillLeader();

    /** Gives up the leadership (deletes the key). Idempotent. */
    void resign();
  }
}
