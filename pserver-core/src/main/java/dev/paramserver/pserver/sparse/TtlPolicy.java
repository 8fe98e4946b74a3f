package dev.paramserver.pserver.sparse;

/**
 * TTL since the last update. The metadata word holds the time of the last update in whole seconds
 * (mod 2^32, compared by difference so the wrap after 136 years does no harm).
 */
final class TtlPolicy implements EvictionPolicy {
  private final long ttlSeconds;

  TtlPolicy(long ttlNanos) {
    if (ttlNanos < 1_000_000_000L) {
      throw new IllegalArgumentException("TTL must be at least 1 s, got " + ttlNanos + " ns");
    }
    this.ttlSeconds = ttlNanos / 1_000_000_000L;
  }

  private static int seconds(long nowNanos) {
    return (int) Math.floorDiv(nowNanos, 1_000_000_000L);
  }

  @Override
  public int created(long nowNanos) {
    return seconds(nowNanos);
  }

  @Override
  public int updated(int meta, long nowNanos) {
    return seconds(nowNanos);
  }

  @Override
  public long score(int meta, long nowNanos) {
    // Older updates score lower; a difference stays right across the int wrap.
    return -(long) (seconds(nowNanos) - meta);
  }

  @Override
  public int restored(long score, long nowNanos) {
    // score is minus the age in seconds; an age from the future (a bad file) counts as 0.
    return seconds(nowNanos) + (int) Math.max(-Integer.MAX_VALUE, Math.min(0, score));
  }

  @Override
  public boolean expired(int meta, long nowNanos) {
    return seconds(nowNanos) - meta >= ttlSeconds;
  }

  @Override
  public boolean expires() {
    return true;
  }

  @Override
  public String name() {
    return "ttl";
  }
}
