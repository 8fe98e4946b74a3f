package dev.paramserver.pserver.shard;

import dev.paramserver.errors.ServiceException;

/**
 * A trainer's request names a slot or block moving to this pserver whose move is not committed yet:
 * the shard waits (bounded) for its placement to change and tries again, answering {@link
 * #fallback} (MOVED naming the committed owner) if it does not change in time.
 */
final class PlacementPendingException extends RuntimeException {
  private final transient ServiceException fallback;

  PlacementPendingException(ServiceException fallback) {
    super(fallback.getMessage(), null, false, false);
    this.fallback = fallback;
  }

  ServiceException fallback() {
    return fallback;
  }
}
