package dev.paramserver.pserver.sparse;

import java.util.Arrays;

/**
 * An open-addressing (linear probing) map from a {@code long} id to an {@code int} slot, with no
 * object per entry. The ids themselves live beside the rows (see {@link RowSlab}), so the index
 * holds only one {@code int} per bucket and reads an entry's id through {@link Keys}: 4 bytes per
 * bucket at a load factor of at most 3/4. Deletion shifts the following entries back (no
 * tombstones), so lookups never slow down after many evictions.
 *
 * <p>Not thread-safe: the owner serialises writers against readers.
 */
final class LongSlotIndex {
  /** The id stored in a slot. */
  interface Keys {
    long key(int slot);
  }

  private static final int EMPTY = -1;
  private static final int MIN_CAPACITY = 16;

  private final Keys keys;
  private int[] buckets;
  private int mask;
  private int size;

  LongSlotIndex(Keys keys) {
    this.keys = keys;
    this.buckets = newBuckets(MIN_CAPACITY);
    this.mask = MIN_CAPACITY - 1;
  }

  private static int[] newBuckets(int capacity) {
    int[] b = new int[capacity];
    Arrays.fill(b, EMPTY);
    return b;
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

  /** Buckets allocated (for the memory figures). */
  int capacity() {
    return buckets.length;
  }

  /** The slot of {@code id}, or -1. */
  int get(long id) {
    int[] b = buckets;
    int m = mask;
    for (int i = (int) mix(id) & m; ; i = (i + 1) & m) {
      int slot = b[i];
      if (slot == EMPTY) {
        return -1;
      }
      if (keys.key(slot) == id) {
        return slot;
      }
    }
  }

  /** Maps {@code id} (absent, and already stored at {@code slot}) to {@code slot}. */
  void put(long id, int slot) {
    if ((size + 1) * 4L > buckets.length * 3L) {
      grow();
    }
    int m = mask;
    int i = (int) mix(id) & m;
    while (buckets[i] != EMPTY) {
      i = (i + 1) & m;
    }
    buckets[i] = slot;
    size++;
  }

  /** Points {@code id}, which is present, to {@code slot} (its row moved there). */
  void move(long id, int slot) {
    buckets[bucketOf(id)] = slot;
  }

  /** Removes {@code id}, which is present. */
  void remove(long id) {
    int m = mask;
    int hole = bucketOf(id);
    // Backward-shift deletion: move every later entry of the probe run whose home bucket is not
    // between the hole and its position into the hole.
    for (int i = (hole + 1) & m; buckets[i] != EMPTY; i = (i + 1) & m) {
      int home = (int) mix(keys.key(buckets[i])) & m;
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
    for (int i = (int) mix(id) & m; ; i = (i + 1) & m) {
      int slot = buckets[i];
      if (slot == EMPTY) {
        throw new IllegalStateException("id " + id + " is not in the index");
      }
      if (keys.key(slot) == id) {
        return i;
      }
    }
  }

  private void grow() {
    int[] old = buckets;
    if (old.length >= 1 << 30) {
      throw new IllegalStateException("index is full at " + size + " entries");
    }
    int[] b = newBuckets(old.length * 2);
    int m = b.length - 1;
    for (int slot : old) {
      if (slot != EMPTY) {
        int i = (int) mix(keys.key(slot)) & m;
        while (b[i] != EMPTY) {
          i = (i + 1) & m;
        }
        b[i] = slot;
      }
    }
    buckets = b;
    mask = m;
  }
}
