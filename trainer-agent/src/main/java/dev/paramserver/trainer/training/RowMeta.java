package dev.paramserver.trainer.training;

import java.util.Arrays;

/**
 * The rows a trainer's row cache holds of one table, by id, with what it knows of each: an
 * open-addressing table of primitive ids with a row (or null: not pulled yet) and a few int fields
 * per id, so that one probe finds all of them. Training thread only. A slot number is valid until
 * the layout changes ({@link #layout}: the next {@link #add} that grows the table, or {@link
 * #remove}).
 */
final class RowMeta {
  /** The batch during which the row's value was read from its pserver (pull or push answer). */
  static final int READ = 0;

  /** The last batch that uses (or, planned ahead, will use) the row. */
  static final int USED = 1;

  private static final int FIELDS = 2;
  private static final long EMPTY = Long.MIN_VALUE;

  private long[] keys = newKeys(64);
  // FIELDS ints and a row per slot; the id Long.MIN_VALUE (the empty marker) has slot keys.length
  private int[] fields = new int[(64 + 1) * FIELDS];
  private float[][] rows = new float[64 + 1][];
  private boolean hasMin;
  private int size;
  // counts the changes that move slots (growing, removing): a slot found under one layout is
  // valid while the layout is unchanged (adding without growing moves no slot)
  private long layout;

  private static long[] newKeys(int n) {
    long[] k = new long[n];
    Arrays.fill(k, EMPTY);
    return k;
  }

  int size() {
    return size;
  }

  /** The layout slots were found under: unchanged, a slot found before is still valid. */
  long layout() {
    return layout;
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

  /** The slot of {@code id}, added without a row and every field {@code Integer.MIN_VALUE}. */
  int add(long id) {
    int s;
    if (id == EMPTY) {
      if (hasMin) {
        return keys.length;
      }
      hasMin = true;
      s = keys.length;
    } else {
      s = probe(id);
      if (keys[s] == id) {
        return s;
      }
      if ((size + 1) * 2L > keys.length) {
        grow();
        s = probe(id);
      }
      keys[s] = id;
    }
    Arrays.fill(fields, s * FIELDS, s * FIELDS + FIELDS, Integer.MIN_VALUE);
    rows[s] = null;
    size++;
    return s;
  }

  private void grow() {
    layout++;
    long[] k = keys;
    int[] f = fields;
    float[][] r = rows;
    keys = newKeys(k.length * 2);
    fields = new int[(keys.length + 1) * FIELDS];
    rows = new float[keys.length + 1][];
    for (int i = 0; i < k.length; i++) {
      if (k[i] != EMPTY) {
        int j = probe(k[i]);
        keys[j] = k[i];
        System.arraycopy(f, i * FIELDS, fields, j * FIELDS, FIELDS);
        rows[j] = r[i];
      }
    }
    System.arraycopy(f, k.length * FIELDS, fields, keys.length * FIELDS, FIELDS);
    rows[keys.length] = r[k.length];
  }

  /** Forgets {@code id} and its row; true if it was there. */
  boolean remove(long id) {
    layout++;
    if (id == EMPTY) {
      boolean had = hasMin;
      if (had) {
        hasMin = false;
        rows[keys.length] = null;
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
        rows[hole] = rows[j];
        hole = j;
      }
    }
    keys[hole] = EMPTY;
    rows[hole] = null;
    size--;
    return true;
  }

  /** The row of {@code slot}, or null when it has none (yet). */
  float[] row(int slot) {
    return rows[slot];
  }

  void setRow(int slot, float[] row) {
    rows[slot] = row;
  }

  int get(int slot, int field) {
    return fields[slot * FIELDS + field];
  }

  void set(int slot, int field, int value) {
    fields[slot * FIELDS + field] = value;
  }

  /** The ids last used before batch {@code before}, least recently used first. */
  long[] evictable(int before) {
    // (used, slot) packed in a long sorts by use; the min id's slot is keys.length
    long[] order = new long[size];
    int n = 0;
    for (int s = 0; s <= keys.length; s++) {
      boolean live = s < keys.length ? keys[s] != EMPTY : hasMin;
      if (live && get(s, USED) < before) {
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
