package dev.paramserver.pserver.sparse;

/**
 * LFU with decay. The metadata word holds a 16-bit count in its low half and, in its high half, the
 * number (mod 2^16) of the half-life period of the last update. The count a row has now is its
 * stored count halved once per period since, so no sweep over the table is ever needed.
 */
final class LfuPolicy implements EvictionPolicy {
  private static final int MAX_COUNT = 0xFFFF;
  private final long halfLifeNanos;

  LfuPolicy(long halfLifeNanos) {
    if (halfLifeNanos <= 0) {
      throw new IllegalArgumentException("LFU half-life must be > 0, got " + halfLifeNanos + " ns");
    }
    this.halfLifeNanos = halfLifeNanos;
  }

  private int period(long nowNanos) {
    return (int) (Math.floorDiv(nowNanos, halfLifeNanos) & 0xFFFF);
  }

  private int countNow(int meta, int period) {
    int elapsed = (period - (meta >>> 16)) & 0xFFFF;
    return elapsed >= 16 ? 0 : (meta & MAX_COUNT) >>> elapsed;
  }

  @Override
  public int created(long nowNanos) {
    return period(nowNanos) << 16;
  }

  @Override
  public int updated(int meta, long nowNanos) {
    int p = period(nowNanos);
    return (p << 16) | Math.min(MAX_COUNT, countNow(meta, p) + 1);
  }

  @Override
  public long score(int meta, long nowNanos) {
    return countNow(meta, period(nowNanos));
  }

  @Override
  public int restored(long score, long nowNanos) {
    return (period(nowNanos) << 16) | (int) Math.max(0, Math.min(MAX_COUNT, score));
  }

  @Override
  public String name() {
    return "lfu";
  }
}
