package dev.paramserver.trainer.training;

import java.util.Arrays;

/**
 * The rows a trainer's row cache holds of one table, by id, with what it knows of each: an
 * open-addressing table of primitive ids with a row (or null: not pulled yet) and two int fields
 * per id, the id and its fields side by side in one array, so that one probe finds all of them in
 * one cache line. Training thread only. A slot number is valid until the layout changes ({@link
 * #layout}: the next {@link #add} that grows the table, or {@link #remove}).
 */
final class RowMeta {
  /** The batch during which the row's value was read from its pserver (pull or push answer). */
  static final int READ = 0;

  /** The last batch that uses (or, planned ahead, will use) the row. */
  static final int USED = 1;

  private static final long EMPTY = Long.MIN_VALUE;
  // both fields Integer.MIN_VALUE
  private static final long UNSET =
      ((long) Integer.MIN_VALUE << 32) | (Integer.MIN_VALUE & 0xFFFFFFFFL);

  // slots of (id, READ << 32 | USED), capacity cap (a power of two); the id Long.MIN_VALUE (the
  // empty marker) has slot cap
  private int cap = 64;
  private long[] slots = newSlots(64);
  private float[][] rows = new float[64 + 1][];
  // per slot: how many unanswered pushes (held, in flight, or being accumulated) carry the row
  private int[] carried = new int[64 + 1];
  private boolean hasMin;
  private int size;
  // counts the changes that move slots (growing, removing): a slot found under one layout is
  // valid while the layout is unchanged (adding without growing moves no slot)
  private long layout;

  private static long[] newSlots(int n) {
    long[] s = new long[2 * (n + 1)];
    for (int i = 0; i < s.length; i += 2) {
      s[i] = EMPTY;
    }
    return s;
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
    int mask = cap - 1;
    int i = mix(id) & mask;
    long k;
    while ((k = slots[2 * i]) != id && k != EMPTY) {
      i = (i + 1) & mask;
    }
    return i;
  }

  /** The slot of {@code id}, or -1 if absent. */
  int slot(long id) {
    if (id == EMPTY) {
      return hasMin ? cap : -1;
    }
    int i = probe(id);
    return slots[2 * i] == id ? i : -1;
  }

  /** The slot of {@code id}, added without a row and every field {@code Integer.MIN_VALUE}. */
  int add(long id) {
    int s;
    if (id == EMPTY) {
      if (hasMin) {
        return cap;
      }
      hasMin = true;
      s = cap;
    } else {
      s = probe(id);
      if (slots[2 * s] == id) {
        return s;
      }
      if ((size + 1) * 2L > cap) {
        grow();
        s = probe(id);
      }
      slots[2 * s] = id;
    }
    slots[2 * s + 1] = UNSET;
    rows[s] = null;
    carried[s] = 0;
    size++;
    return s;
  }

  private void grow() {
    layout++;
    long[] old = slots;
    float[][] r = rows;
    int[] c = carried;
    int oldCap = cap;
    cap = oldCap * 2;
    slots = newSlots(cap);
    rows = new float[cap + 1][];
    carried = new int[cap + 1];
    for (int i = 0; i < oldCap; i++) {
      long id = old[2 * i];
      if (id != EMPTY) {
        int j = probe(id);
        slots[2 * j] = id;
        slots[2 * j + 1] = old[2 * i + 1];
        rows[j] = r[i];
        carried[j] = c[i];
      }
    }
    slots[2 * cap + 1] = old[2 * oldCap + 1];
    rows[cap] = r[oldCap];
    carried[cap] = c[oldCap];
  }

  /** Forgets {@code id} and its row; true if it was there. */
  boolean remove(long id) {
    layout++;
    if (id == EMPTY) {
      boolean had = hasMin;
      if (had) {
        hasMin = false;
        rows[cap] = null;
        carried[cap] = 0;
        size--;
      }
      return had;
    }
    int i = probe(id);
    if (slots[2 * i] != id) {
      return false;
    }
    // backward-shift deletion keeps every probe run unbroken
    int mask = cap - 1;
    int hole = i;
    for (int j = (i + 1) & mask; slots[2 * j] != EMPTY; j = (j + 1) & mask) {
      int home = mix(slots[2 * j]) & mask;
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        slots[2 * hole] = slots[2 * j];
        slots[2 * hole + 1] = slots[2 * j + 1];
        rows[hole] = rows[j];
        carried[hole] = carried[j];
        hole = j;
      }
    }
    slots[2 * hole] = EMPTY;
    rows[hole] = null;
    carried[hole] = 0;
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

  /** How many unanswered pushes carry the row of {@code slot}. */
  int carried(int slot) {
    return carried[slot];
  }

  /** One more ({@code +1}) or one fewer ({@code -1}) unanswered push carries the row. */
  void carry(int slot, int delta) {
    carried[slot] += delta;
  }

  int get(int slot, int field) {
    long v = slots[2 * slot + 1];
    return field == READ ? (int) (v >>> 32) : (int) v;
  }

  void set(int slot, int field, int value) {
    int at = 2 * slot + 1;
    long v = slots[at];
    slots[at] =
        field == READ
            ? ((long) value << 32) | (v & 0xFFFFFFFFL)
            : (v & 0xFFFFFFFF00000000L) | (value & 0xFFFFFFFFL);
  }

  /** The ids last used before batch {@code before}, least recently used first. */
  long[] evictable(int before) {
    // (used, slot) packed in a long sorts by use; the min id's slot is cap
    long[] order = new long[size];
    int n = 0;
    for (int s = 0; s <= cap; s++) {
      boolean live = s < cap ? slots[2 * s] != EMPTY : hasMin;
      if (live && get(s, USED) < before) {
        order[n++] = ((long) get(s, USED) << 32) | s;
      }
    }
    Arrays.sort(order, 0, n);
    long[] ids = new long[n];
    for (int i = 0; i < n; i++) {
      int s = (int) order[i];
      ids[i] = s == cap ? EMPTY : slots[2 * s];
    }
    return ids;
  }
}
