package dev.paramserver.tensor;

import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Pooled heap arrays that a message received in several transport buffers is gathered into, so that
 * it parses from one array (protobuf's fastest decoder, its {@code bytes} fields views of the
 * array) and the transport's buffers go back at once; also the arrays a server's answers are built
 * in and given back once written (rpc-support's {@code LendingMarshaller}). Arrays are pooled by
 * power-of-two size class, from {@value #MIN_BYTES} bytes up to {@value #MAX_POOLED_BYTES}, at most
 * {@value #PER_CLASS} of each class and {@value #MAX_KEPT_BYTES} bytes in all (what an idle server
 * keeps); a larger message gets an array of its own. Thread-safe.
 */
public final class ReceiveBuffers {
  /** The smallest pooled array: a smaller request gets one of this size. */
  public static final int MIN_BYTES = 64 << 10;

  static final int MAX_POOLED_BYTES = 4 << 20;
  static final int PER_CLASS = 8;
  static final long MAX_KEPT_BYTES = 16 << 20;
  private static final int MIN_SHIFT = Integer.numberOfTrailingZeros(MIN_BYTES);
  private static final int CLASSES =
      Integer.numberOfTrailingZeros(MAX_POOLED_BYTES) - MIN_SHIFT + 1;

  @SuppressWarnings("unchecked")
  private final ConcurrentLinkedDeque<byte[]>[] free = new ConcurrentLinkedDeque[CLASSES];

  private final AtomicInteger[] pooled = new AtomicInteger[CLASSES];
  private final AtomicLong kept = new AtomicLong();

  public ReceiveBuffers() {
    for (int c = 0; c < CLASSES; c++) {
      free[c] = new ConcurrentLinkedDeque<>();
      pooled[c] = new AtomicInteger();
    }
  }

  /** An array of at least {@code bytes} bytes: pooled when one of its size class is free. */
  public byte[] take(int bytes) {
    int c = sizeClass(bytes);
    if (c < 0) {
      return new byte[bytes];
    }
    byte[] b = free[c].pollFirst();
    if (b != null) {
      pooled[c].decrementAndGet();
      kept.addAndGet(-b.length);
      return b;
    }
    return new byte[MIN_BYTES << c];
  }

  /** Returns an array from {@link #take}; nothing may read or write it afterwards. */
  public void give(byte[] b) {
    int c = sizeClass(b.length);
    if (c < 0 || (MIN_BYTES << c) != b.length) {
      return;
    }
    if (kept.addAndGet(b.length) > MAX_KEPT_BYTES) {
      kept.addAndGet(-b.length);
      return;
    }
    if (pooled[c].incrementAndGet() <= PER_CLASS) {
      free[c].offerFirst(b);
    } else {
      pooled[c].decrementAndGet();
      kept.addAndGet(-b.length);
    }
  }

  /** Arrays waiting in the pool (for tests and metrics). */
  public int pooled() {
    int n = 0;
    for (AtomicInteger p : pooled) {
      n += p.get();
    }
    return n;
  }

  /** The size class of {@code bytes}, or -1 when too large to pool. */
  private static int sizeClass(int bytes) {
    if (bytes > MAX_POOLED_BYTES) {
      return -1;
    }
    int shift = bytes <= MIN_BYTES ? MIN_SHIFT : 32 - Integer.numberOfLeadingZeros(bytes - 1);
    return shift - MIN_SHIFT;
  }
}
