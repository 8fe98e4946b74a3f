package dev.paramserver.etcd;

/**
 * Told about every etcd request the coordinator waits for (get, put, delete, transactions, lease
 * grants), for latency metrics. Implementations must be fast and must not throw; they are called on
 * the thread that waited for the call.
 */
@FunctionalInterface
public interface CallObserver {
  /** Observes nothing. */
  CallObserver NONE = (operation, nanos, success) -> {};

  /**
   * One finished call.
   *
   * @param operation a short, fixed name of the kind of call: {@code get}, {@code get-prefix},
   *     {@code put}, {@code delete}, {@code create-if-absent}, {@code compare-and-swap}, {@code
   *     commit}, {@code lease-grant} (never a key, so it is safe as a metric tag)
   * @param nanos how long the call took, including a timeout
   * @param success false if it failed or timed out
   */
  void onCall(String operation, long nanos, boolean success);
}
