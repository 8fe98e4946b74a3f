package dev.paramserver.pserver.sparse;

/**
 * Gives every occurrence of a repeated id in an answer the bytes of its last occurrence (the row's
 * values after the whole update), with one pass from the end over an open-addressing table of the
 * ids kept per thread (no allocation once it is large enough): the first sighting from the end is
 * an id's last occurrence.
 */
final class RepeatedIds {
  private static final ThreadLocal<RepeatedIds> SCRATCH = ThreadLocal.withInitial(RepeatedIds::new);

  private long[] keys = new long[0];
  // (generation << 32) | position of the id's last occurrence; another generation: empty
  private long[] entries = new long[0];
  private int generation;

  private RepeatedIds() {}

  /**
   * Copies, for each id repeated in {@code ids}, its last row of {@code rows} over the others.
   *
   * @return whether {@code ids} repeats an id
   */
  static boolean settle(long[] ids, byte[] rows, int rowBytes) {
    return ids.length > 1 && SCRATCH.get().settleRepeats(ids, rows, rowBytes);
  }

  private boolean settleRepeats(long[] ids, byte[] rows, int rowBytes) {
    boolean repeats = false;
    int n = ids.length;
    int capacity = Integer.highestOneBit(2 * n - 1) << 1;
    if (keys.length < capacity) {
      keys = new long[capacity];
      entries = new long[capacity];
      generation = 0;
    }
    if (++generation == Integer.MAX_VALUE) {
      java.util.Arrays.fill(entries, 0L);
      generation = 1;
    }
    int mask = keys.length - 1;
    int shift = 64 - Integer.numberOfTrailingZeros(keys.length);
    long gen = (long) generation << 32;
    for (int i = n - 1; i >= 0; i--) {
      long id = ids[i];
      int b = (int) ((id * 0x9E3779B97F4A7C15L) >>> shift);
      while (true) {
        long e = entries[b];
        if ((e & 0xFFFFFFFF00000000L) != gen) {
          keys[b] = id;
          entries[b] = gen | i;
          break;
        }
        if (keys[b] == id) {
          System.arraycopy(rows, (int) e * rowBytes, rows, i * rowBytes, rowBytes);
          repeats = true;
          break;
        }
        b = (b + 1) & mask;
      }
    }
    return repeats;
  }
}
