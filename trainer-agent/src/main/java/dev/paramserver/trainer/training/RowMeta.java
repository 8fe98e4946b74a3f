package dev.paramserver.trainer.training;

import java.util.Arrays;

/**
 * What a trainer's row cache knows of each row of one table, by id: an open-addressing table of
 * primitive ids with a few int fields per row. Training thread only. A slot number is valid until
 * the next {@link #add} or {@link #remove}.
 */
final class RowMeta {
  /** The batch during which the row's value was read from its pserver (pull or push answer). */
  static final int READ = 0;

  /** The last batch that uses (or, planned ahead, will use) the row. */
  static final int USED = 1;

  /** The last batch whose local step changed the row. */
  static final int STEPPED = 2;

  /**
   * How many pushes not yet answered carry a gradient of the row (held or in flight): such a row is
   * never evicted, and its value comes from their answers.
   */
  static final int PINS = 3;

  /** The last planning pass that looked at the row (to skip an id repeated in one batch). */
  static final int MARK = 4;

  private static final int FIELDS = 5;
  private static final long EMPTY = Long.MIN_VALUE;

  private long[] keys = newKeys(64);
  // FIELDS ints per slot; the id Long.MIN_VALUE (the empty marker) has the slot keys.length
  private int[] fields = new int[(64 + 1) * FIELDS];
  private boolean hasMin;
  private int size;

  private static long[] newKeys(int n) {
    long[] k = new long[n];
    Arrays.fill(k, EMPTY);
    return k;
  }

  int size() {
    return size;
  }

  private static int mix(long id) {
    long h = id * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  private int probe(long id) {
    int mask = keys.length - 1;
    int i = mix(id) & mask;
    while (keys[i] != id && keys[i] != EMPTY) {
      i = (i + 1) & mask;
    }
    return i;
  }

  /** The slot of {@code id}, or -1 if absent. */
  int slot(long id) {
    if (id == EMPTY) {
      return hasMin ? keys.length : -1;
    }
    int i = probe(id);
    return keys[i] == id ? i : -1;
  }

  /** The slot of {@code id}, added with every field {@code Integer.MIN_VALUE} if absent. */
  int add(long id) {
    int s = slot(id);
    if (s >= 0) {
      return s;
    }
    if (id == EMPTY) {
      hasMin = true;
      s = keys.length;
    } else {
      if ((size + 1) * 4L > keys.length * 3L) {
        grow();
      }
      s = probe(id);
      keys[s] = id;
    }
    Arrays.fill(fields, s * FIELDS, s * FIELDS + FIELDS, Integer.MIN_VALUE);
    fields[s * FIELDS + PINS] = 0;
    size++;
    return s;
  }

  private void grow() {
    long[] k = keys;
    int[] f = fields;
    keys = newKeys(k.length * 2);
    fields = new int[(keys.length + 1) * FIELDS];
    for (int i = 0; i < k.length; i++) {
      if (k[i] != EMPTY) {
        int j = probe(k[i]);
        keys[j] = k[i];
        System.arraycopy(f, i * FIELDS, fields, j * FIELDS, FIELDS);
      }
    }
    System.arraycopy(f, k.length * FIELDS, fields, keys.length * FIELDS, FIELDS);
  }

  /** Forgets {@code id}; true if it was there. */
  boolean remove(long id) {
    if (id == EMPTY) {
      boolean had = hasMin;
      if (had) {
        hasMin = false;
        size--;
      }
      return had;
    }
    int i = probe(id);
    if (keys[i] != id) {
      return false;
    }
    // backward-shift deletion keeps every probe run unbroken
    int mask = keys.length - 1;
    int hole = i;
    for (int j = (i + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask) {
      int home = mix(keys[j]) & mask;
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        keys[hole] = keys[j];
        System.arraycopy(fields, j * FIELDS, fields, hole * FIELDS, FIELDS);
        hole = j;
      }
    }
    keys[hole] = EMPTY;
    size--;
    return true;
  }

  int get(int slot, int field) {
    return fields[slot * FIELDS + field];
  }

  void set(int slot, int field, int value) {
    fields[slot * FIELDS + field] = value;
  }

  /**
   * The ids that may be evicted, least recently used first: unpinned and last used before batch
   * {@code before}.
   */
  long[] evictable(int before) {
    // (used, slot) packed in a long sorts by use; the min id's slot is keys.length
    long[] order = new long[size];
    int n = 0;
    for (int s = 0; s <= keys.length; s++) {
      boolean live = s < keys.length ? keys[s] != EMPTY : hasMin;
      if (live && get(s, PINS) == 0 && get(s, USED) < before) {
        order[n++] = ((long) get(s, USED) << 32) | s;
      }
    }
    Arrays.sort(order, 0, n);
    long[] ids = new long[n];
    for (int i = 0; i < n; i++) {
      int s = (int) order[i];
      ids[i] = s == keys.length ? EMPTY : keys[s];
    }
    return ids;
  }
}
