package dev.paramserver.etcd;

import java.time.Duration;

/**
 * An etcd lease kept alive in the background. Keys put under it vanish when it ends: when revoked,
 * or when keep-alives fail for longer than the TTL. The lease notices the loss and tells its
 * listeners once.
 */
public interface Lease extends AutoCloseable {

  long id();

  Duration ttl();

  /** False once the lease was revoked or is known to be lost. */
  boolean isAlive();

  /** Runs the listener once when the lease is lost (not when it is revoked on purpose). */
  void onLost(Runnable listener);

  /** Revokes the lease; its keys are deleted at once. Idempotent. */
  void revoke();

  @Override
  default void close() {
    revoke();
  }
}
