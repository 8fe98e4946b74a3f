package dev.paramserver.pserver.sparse;

import java.util.Arrays;

/**
 * An open-addressing (linear probing) map from a {@code long} id to an {@code int} slot, with no
 * object per entry. The ids themselves live beside the rows (see {@link RowSlab}): a bucket holds
 * the slot and the high half of the id's hash (8 bytes per bucket at a load factor of at most 3/4),
 * and a probe reads the id through {@link Keys} only when that half matches, so a probe step that
 * misses costs no load outside the bucket array (the lookups were most of a pserver's time, each
 * step a cache miss into the rows). Deletion shifts the following entries back (no tombstones), so
 * lookups never slow down after many evictions.
 *
 * <p>Not thread-safe: the owner serialises writers against readers.
 */
final class LongSlotIndex {
  /** The id stored in a slot. */
  interface Keys {
    long key(int slot);
  }

  // a bucket holds the high 32 bits of its id's hash (a tag) and the slot: a probe reads an id
  // from the rows only when the tags match, so a miss costs no load beyond the bucket array
  private static final long EMPTY = -1L;
  private static final int MIN_CAPACITY = 16;

  private final Keys keys;
  private long[] buckets;
  private int mask;
  private int size;

  LongSlotIndex(Keys keys) {
    this.keys = keys;
    this.buckets = newBuckets(MIN_CAPACITY);
    this.mask = MIN_CAPACITY - 1;
  }

  private static long[] newBuckets(int capacity) {
    long[] b = new long[capacity];
    Arrays.fill(b, EMPTY);
    return b;
  }

  private static long entry(long hash, int slot) {
    return (hash & 0xFFFFFFFF00000000L) | (slot & 0xFFFFFFFFL);
  }

  /** A well-mixed hash of an id (the finaliser of MurmurHash3), so sequential ids spread out. */
  static long mix(long id) {
    long h = id;
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  int size() {
    return size;
  }

  /** Bytes of the bucket array (for the memory figures). */
  long bytes() {
    return (long) Long.BYTES * buckets.length;
  }

  /** Buckets allocated. */
  int capacity() {
    return buckets.length;
  }

  /** The slot of {@code id}, or -1. */
  int get(long id) {
    return get(id, mix(id));
  }

  /**
   * Loads the home bucket of hash {@code h} (a cache line on its way before {@link #get} needs it);
   * the value means nothing.
   */
  int home(long h) {
    return (int) buckets[(int) h & mask];
  }

  /** The slot of {@code id}, whose {@link #mix} is {@code h}, or -1. */
  int get(long id, long h) {
    long[] b = buckets;
    int m = mask;
    int tag = (int) (h >>> 32);
    for (int i = (int) h & m; ; i = (i + 1) & m) {
      long e = b[i];
      if (e == EMPTY) {
        return -1;
      }
      if ((int) (e >>> 32) == tag && keys.key((int) e) == id) {
        return (int) e;
      }
    }
  }

  /** Maps {@code id} (absent, and already stored at {@code slot}) to {@code slot}. */
  void put(long id, int slot) {
    if ((size + 1) * 4L > buckets.length * 3L) {
      grow();
    }
    int m = mask;
    long h = mix(id);
    int i = (int) h & m;
    while (buckets[i] != EMPTY) {
      i = (i + 1) & m;
    }
    buckets[i] = entry(h, slot);
    size++;
  }

  /** Points {@code id}, which is present, to {@code slot} (its row moved there). */
  void move(long id, int slot) {
    int i = bucketOf(id);
    buckets[i] = entry(buckets[i], slot);
  }

  /** Removes {@code id}, which is present. */
  void remove(long id) {
    int m = mask;
    int hole = bucketOf(id);
    // Backward-shift deletion: move every later entry of the probe run whose home bucket is not
    // between the hole and its position into the hole.
    for (int i = (hole + 1) & m; buckets[i] != EMPTY; i = (i + 1) & m) {
      int home = (int) mix(keys.key((int) buckets[i])) & m;
      if (((i - home) & m) >= ((i - hole) & m)) {
        buckets[hole] = buckets[i];
        hole = i;
      }
    }
    buckets[hole] = EMPTY;
    size--;
  }

  /** Drops every entry and shrinks back to the initial capacity. */
  void clear() {
    buckets = newBuckets(MIN_CAPACITY);
    mask = MIN_CAPACITY - 1;
    size = 0;
  }

  private int bucketOf(long id) {
    int m = mask;
    long h = mix(id);
    int tag = (int) (h >>> 32);
    for (int i = (int) h & m; ; i = (i + 1) & m) {
      long e = buckets[i];
      if (e == EMPTY) {
        throw new IllegalStateException("id " + id + " is not in the index");
      }
      if ((int) (e >>> 32) == tag && keys.key((int) e) == id) {
        return i;
      }
    }
  }

  private void grow() {
    long[] old = buckets;
    if (old.length >= 1 << 30) {
      throw new IllegalStateException("index is full at " + size + " entries");
    }
    long[] b = newBuckets(old.length * 2);
    int m = b.length - 1;
    for (long e : old) {
      if (e != EMPTY) {
        // the tag is the hash's high half: the low half (the home bucket) comes from the id
        int i = (int) mix(keys.key((int) e)) & m;
        while (b[i] != EMPTY) {
          i = (i + 1) & m;
        }
        b[i] = e;
      }
    }
    buckets = b;
    mask = m;
  }
}
