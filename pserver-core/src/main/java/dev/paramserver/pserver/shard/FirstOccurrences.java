package dev.paramserver.pserver.shard;

/**
 * Where each id of a request occurs first, so that a repeated id (hot rows of a Zipf batch) is read
 * once and its values copied: an open-addressing table of positions over the request's own ids, no
 * object per id.
 */
final class FirstOccurrences {
  private FirstOccurrences() {}

  /**
   * {@code first[i]}: the lowest {@code j} with {@code ids[j] == ids[i]} ({@code i} itself if
   * none).
   */
  static int[] of(long[] ids) {
    int n = ids.length;
    int[] first = new int[n];
    if (n < 2) {
      return first;
    }
    // at least twice as many buckets as ids: short probe runs
    int capacity = Integer.highestOneBit(2 * n - 1) << 1;
    int shift = 64 - Integer.numberOfTrailingZeros(capacity);
    int mask = capacity - 1;
    // position + 1 of the id in each bucket; 0: empty
    int[] buckets = new int[capacity];
    for (int i = 0; i < n; i++) {
      long id = ids[i];
      int b = (int) ((id * 0x9E3779B97F4A7C15L) >>> shift);
      while (true) {
        int p = buckets[b];
        if (p == 0) {
          buckets[b] = i + 1;
          first[i] = i;
          break;
        }
        if (ids[p - 1] == id) {
          first[i] = p - 1;
          break;
        }
        b = (b + 1) & mask;
      }
    }
    return first;
  }
}
