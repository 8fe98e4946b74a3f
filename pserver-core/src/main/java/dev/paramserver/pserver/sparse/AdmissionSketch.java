package dev.paramserver.pserver.sparse;

/**
 * A count-min sketch of how often ids without a row were pushed: {@value #DEPTH} rows of byte
 * counters, conservative update (only the smallest counters grow), saturating at 255. After {@code
 * 8 * width} increments every counter is halved, so the sketch tracks recent frequency and one-off
 * ids from long ago do not add up. Not thread-safe: each table stripe owns one.
 */
final class AdmissionSketch {
  static final int DEPTH = 4;
  private final byte[] counters;
  private final int mask;
  private final int threshold;
  private long increments;

  /**
   * @param width counters per hash row, rounded up to a power of two
   * @param threshold pushes an id needs before it is admitted (1 admits every id)
   */
  AdmissionSketch(int width, int threshold) {
    if (width < 1 || width > 1 << 28) {
      throw new IllegalArgumentException("sketch width must be in [1, 2^28], got " + width);
    }
    if (threshold < 1 || threshold > 255) {
      throw new IllegalArgumentException(
          "admission threshold must be in [1, 255], got " + threshold);
    }
    int w = Integer.highestOneBit(Math.max(1, width - 1)) << 1;
    this.counters = new byte[DEPTH * w];
    this.mask = w - 1;
    this.threshold = threshold;
  }

  /** Records one push of {@code id}; true when the id has now been seen {@code threshold} times. */
  boolean admit(long id) {
    if (threshold == 1) {
      return true;
    }
    int width = mask + 1;
    long h = LongSlotIndex.mix(id ^ 0x5DEECE66DL);
    int min = 255;
    for (int d = 0; d < DEPTH; d++) {
      int c = counters[d * width + bucket(h, d)] & 0xFF;
      min = Math.min(min, c);
    }
    int next = Math.min(255, min + 1);
    for (int d = 0; d < DEPTH; d++) {
      int i = d * width + bucket(h, d);
      if ((counters[i] & 0xFF) < next) {
        counters[i] = (byte) next;
      }
    }
    if (++increments >= 8L * width) {
      age();
    }
    return next >= threshold;
  }

  private int bucket(long h, int d) {
    // Two independent 32-bit halves combined (Kirsch-Mitzenmacher) give DEPTH hash functions.
    int h1 = (int) h;
    int h2 = (int) (h >>> 32) | 1;
    return (h1 + d * h2) & mask;
  }

  private void age() {
    for (int i = 0; i < counters.length; i++) {
      counters[i] = (byte) ((counters[i] & 0xFF) >>> 1);
    }
    increments = 0;
  }

  long bytes() {
    return counters.length;
  }

  /** A copy of the counters (for checkpoints and copies). */
  byte[] counters() {
    return counters.clone();
  }

  /** Increments since the counters were last halved. */
  long increments() {
    return increments;
  }

  /**
   * Takes the state of a sketch of the same width (from a checkpoint or a copy).
   *
   * @return false when {@code saved} is of another width (nothing changes)
   */
  boolean restore(byte[] saved, long savedIncrements) {
    if (saved.length != counters.length) {
      return false;
    }
    System.arraycopy(saved, 0, counters, 0, counters.length);
    increments = savedIncrements;
    return true;
  }
}
