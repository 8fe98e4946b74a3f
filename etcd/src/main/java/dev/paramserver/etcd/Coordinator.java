package dev.paramserver.etcd;

import java.time.Duration;

/**
 * The process's connection to the coordination store (etcd). One per process; every operation has a
 * timeout and fails with {@link CoordinationException} rather than hanging.
 */
public interface Coordinator extends AutoCloseable {

  /** Key names of this job, all under {@code /paramserver/<job>/}. */
  JobKeys keys();

  /** Reads, writes and transactions on keys. */
  KeyValueStore kv();

  /**
   * Grants a lease of the given time-to-live and keeps it alive in the background until it is
   * revoked or lost (for example when etcd is unreachable for longer than the TTL).
   */
  Lease grantLease(Duration ttl);

  /** An election among the candidates that campaign under {@code electionKey}. */
  LeaderElection election(String electionKey);

  /**
   * Claims the lowest free index {@code i} in {@code [0, max)} by creating {@code prefix + i} under
   * the lease in a transaction that only succeeds if the key does not exist. Waits up to {@code
   * timeout} for an index to become free (an old holder's lease expiring).
   *
   * @return the index claimed
   * @throws CoordinationException naming the prefix and {@code max} if no index was free within the
   *     timeout, or if etcd fails or the lease is revoked or lost
   */
  int claimIndex(String prefix, int max, byte[] value, Lease lease, Duration timeout)
      throws InterruptedException;

  /**
   * Like {@link #claimIndex(String, int, byte[], Lease, Duration)}, but tries {@code preferred}
   * first (each time it looks for a free index), so that a holder that lost its lease, for example
   * across an etcd outage, gets its old index back instead of a neighbour's. A {@code preferred}
   * outside {@code [0, max)} is ignored.
   *
   * @return the index claimed
   */
  default int claimIndex(
      String prefix, int max, byte[] value, Lease lease, Duration timeout, int preferred)
      throws InterruptedException {
    if (preferred >= 0 && preferred < max && kv().putIfAbsent(prefix + preferred, value, lease)) {
      return preferred;
    }
    return claimIndex(prefix, max, value, lease, timeout);
  }

  /** True when the last call to etcd succeeded (for health indicators). */
  boolean isConnected();

  @Override
  void close();
}
