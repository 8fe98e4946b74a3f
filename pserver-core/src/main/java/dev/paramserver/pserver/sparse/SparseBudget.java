package dev.paramserver.pserver.sparse;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A byte budget shared by the sparse tables of one pserver ({@code sparse.max-bytes}). A table that
 * would go over it evicts one of its own rows before it adds one; the bytes of a row are its id,
 * values, optimizer slots, counters and its share of the index.
 */
public final class SparseBudget {
  private final long maxBytes;
  private final AtomicLong used = new AtomicLong();

  public SparseBudget(long maxBytes) {
    if (maxBytes < 1) {
      throw new IllegalArgumentException("max bytes must be >= 1, got " + maxBytes);
    }
    this.maxBytes = maxBytes;
  }

  public long maxBytes() {
    return maxBytes;
  }

  public long used() {
    return used.get();
  }

  boolean full(long rowBytes) {
    return used.get() + rowBytes > maxBytes;
  }

  void add(long bytes) {
    used.addAndGet(bytes);
  }
}
