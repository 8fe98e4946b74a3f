package dev.paramserver.pserver.sparse;

import java.time.Duration;

/**
 * Which rows a capped table drops first. Each row keeps one {@code int} of policy metadata, updated
 * on every push of the row; when the table is full the row with the lowest {@link #score} among a
 * few sampled rows is evicted.
 *
 * <ul>
 *   <li>{@link #lfu}: least frequently updated, with counts halving every half-life, so ids that
 *       were hot once and went cold age out. Fits long-lived popular ids (users, items, words).
 *   <li>{@link #ttl}: least recently updated, and a row not updated for the TTL expires even below
 *       the cap. Fits ids with a life time (sessions, ads of a campaign, news articles).
 * </ul>
 */
public interface EvictionPolicy {

  /** Metadata of a row created at {@code nowNanos}. */
  int created(long nowNanos);

  /** Metadata of a row after a push at {@code nowNanos}. */
  int updated(int meta, long nowNanos);

  /** Lower scores are evicted first. */
  long score(int meta, long nowNanos);

  /**
   * Metadata of a row restored at {@code nowNanos} whose {@link #score} was {@code score} when it
   * was checkpointed: the row scores the same now as it did then.
   */
  int restored(long score, long nowNanos);

  /** Whether a row with this metadata is dead already (its values are no longer served). */
  default boolean expired(int meta, long nowNanos) {
    return false;
  }

  /** Whether rows ever expire (below the cap too). */
  default boolean expires() {
    return false;
  }

  /** The policy's name, as in the {@code eviction.policy} property. */
  String name();

  /** LFU whose counts halve every {@code halfLife}. */
  static EvictionPolicy lfu(Duration halfLife) {
    return new LfuPolicy(halfLife.toNanos());
  }

  /** Rows not updated for {@code ttl} expire; at the cap the least recently updated goes. */
  static EvictionPolicy ttl(Duration ttl) {
    return new TtlPolicy(ttl.toNanos());
  }
}
