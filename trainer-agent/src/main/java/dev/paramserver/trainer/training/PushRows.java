package dev.paramserver.trainer.training;

import dev.paramserver.models.BatchRows;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.pserver.FlatRows;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sparse rows of one push, or of the batches summed for it, in flat arrays by push-local index
 * (every cached table has a row for every id): the ids, and per table the row cache's row arrays,
 * their slots in the cache's {@link RowMeta}, the summed gradients, the rows' values before their
 * first local step ({@link #putBefore}: what a pserver that lost its state is re-initialised with)
 * and when the push left ({@link #copyBase}, what {@link RowCache#rebase} subtracts). The push is
 * encoded from these arrays and its answers are taken in through them: no lookup by id unless
 * pushes are summed.
 *
 * <p>Each row it holds counts once in its {@link RowMeta#carried} count (added here, given back by
 * {@link #release} or, summed into another push that holds it already, by {@link #merge}), so the
 * cache knows which rows unanswered pushes carry without asking them. Slots found under one {@link
 * RowMeta#layout} are found again by id when it changed. Training thread only.
 */
final class PushRows {
  private final List<String> names;
  private final int[] widths;
  private final RowMeta[] metas;
  private final float[][][] refs;
  private final int[][] slots;
  private final float[][] grads;
  private final float[][] base;
  private final float[][] before;
  private final long[] layouts;
  private long[] ids = new long[0];
  private int count;
  // id -> index + 1 (0: free), open addressing; kept while mapped, built when first needed
  private long[] keys = new long[0];
  private int[] at = new int[0];
  private boolean mapped;

  /** Rows of the tables {@code names} (widths, the cache's metas: same order). */
  PushRows(List<String> names, int[] widths, RowMeta[] metas) {
    this.names = names;
    this.widths = widths;
    this.metas = metas;
    int n = widths.length;
    this.refs = new float[n][0][];
    this.slots = new int[n][0];
    this.grads = new float[n][0];
    this.base = new float[n][0];
    this.before = new float[n][0];
    this.layouts = new long[n];
  }

  int count() {
    return count;
  }

  boolean isEmpty() {
    return count == 0;
  }

  long id(int k) {
    return ids[k];
  }

  /** Table {@code t}'s row {@code k} in the cache (null: it had no value). */
  float[] row(int t, int k) {
    return refs[t][k];
  }

  /** Table {@code t}'s summed gradients, row {@code k} at {@code k * width}. */
  float[] grads(int t) {
    return grads[t];
  }

  /** Table {@code t}'s rows when the push left, row {@code k} at {@code k * width}. */
  float[] base(int t) {
    return base[t];
  }

  /** Table {@code t}'s rows before their first local step, row {@code k} at {@code k * width}. */
  float[] before(int t) {
    return before[t];
  }

  /**
   * Puts into {@code into} a sparse table per table of the rows before their first local step
   * (those that had a value), for a pserver re-initialised from this push; returns {@code into}.
   */
  Parameters putBefore(Parameters into) {
    for (int t = 0; t < widths.length; t++) {
      int w = widths[t];
      Parameters.SparseTable table = new Parameters.SparseTable(w);
      for (int k = 0; k < count; k++) {
        if (refs[t][k] != null) {
          table.put(ids[k], Arrays.copyOfRange(before[t], k * w, (k + 1) * w));
        }
      }
      into.putSparse(names.get(t), table);
    }
    return into;
  }

  /** Empties it, keeping its arrays. Its rows' counts must have been given back. */
  void clear() {
    count = 0;
    mapped = false;
  }

  /** Adds batch {@code b}'s gradients, its rows found at {@code slots[t]} (valid now). */
  void add(BatchRows b, int[][] batchSlots) {
    fixSlots();
    boolean fresh = count == 0;
    for (int k = 0; k < b.count(); k++) {
      long id = b.ids()[k];
      int j = fresh ? -1 : find(id);
      if (j < 0) {
        j = append(id);
        for (int t = 0; t < widths.length; t++) {
          refs[t][j] = b.table(t).values()[k];
          slots[t][j] = batchSlots[t][k];
          metas[t].carry(slots[t][j], 1);
          RowCopy.copy(b.table(t).grads(), k * widths[t], grads[t], j * widths[t], widths[t]);
        }
      } else {
        for (int t = 0; t < widths.length; t++) {
          addRow(b.table(t).grads(), k, grads[t], j, widths[t]);
        }
      }
    }
  }

  /** Adds {@code other}'s gradients and takes its rows' counts over; {@code other} is emptied. */
  void merge(PushRows other) {
    fixSlots();
    other.fixSlots();
    for (int k = 0; k < other.count; k++) {
      long id = other.ids[k];
      int j = find(id);
      if (j < 0) {
        j = append(id);
        for (int t = 0; t < widths.length; t++) {
          refs[t][j] = other.refs[t][k];
          slots[t][j] = other.slots[t][k];
          RowCopy.copy(other.grads[t], k * widths[t], grads[t], j * widths[t], widths[t]);
          // a row new to this push: its value before the other's local step is its first
          RowCopy.copy(other.before[t], k * widths[t], before[t], j * widths[t], widths[t]);
        }
      } else {
        for (int t = 0; t < widths.length; t++) {
          addRow(other.grads[t], k, grads[t], j, widths[t]);
          metas[t].carry(other.slots[t][k], -1);
        }
      }
    }
    other.clear();
  }

  /** Gives back every row's count (the push was answered); then empties it. */
  void release() {
    release(Integer.MIN_VALUE);
  }

  /**
   * {@link #release}; with {@code readAt} above {@code Integer.MIN_VALUE} also marks each row read
   * during batch {@code readAt}, the answer having confirmed that nobody else changed it (see
   * {@link RowCache#confirm}): every row that had a value when the push left and still holds that
   * value's array.
   */
  void release(int readAt) {
    fixSlots();
    boolean confirm = readAt != Integer.MIN_VALUE;
    for (int t = 0; t < widths.length; t++) {
      RowMeta meta = metas[t];
      for (int k = 0; k < count; k++) {
        int s = slots[t][k];
        if (s >= 0) {
          meta.carry(s, -1);
          if (confirm && refs[t][k] != null && meta.row(s) == refs[t][k]) {
            meta.set(s, RowMeta.READ, readAt);
          }
        }
      }
    }
    clear();
  }

  /** The slot of table {@code t}'s row {@code k} in the cache now (-1: evicted). */
  int slot(int t, int k) {
    fixSlots();
    return slots[t][k];
  }

  /** Multiplies every gradient by {@code f}. */
  void scale(float f) {
    for (int t = 0; t < widths.length; t++) {
      for (int i = 0; i < count * widths[t]; i++) {
        grads[t][i] *= f;
      }
    }
  }

  /** Copies each row's value now into {@link #base}. */
  void copyBase() {
    for (int t = 0; t < widths.length; t++) {
      for (int k = 0; k < count; k++) {
        float[] r = refs[t][k];
        if (r != null) {
          RowCopy.copy(r, 0, base[t], k * widths[t], widths[t]);
        }
      }
    }
  }

  /** The gradients as the push encodes them, by table name. */
  Map<String, FlatRows> flat() {
    Map<String, FlatRows> out = new LinkedHashMap<>();
    for (int t = 0; t < widths.length; t++) {
      out.put(names.get(t), new FlatRows(ids, count, grads[t]));
    }
    return out;
  }

  /**
   * The index of {@code id}, looked for at {@code hint} first, then a little further on (an answer
   * lists a push's rows in their order, those of other pservers left out), then by id; -1 when
   * absent.
   */
  int find(long id, int hint) {
    for (int k = Math.max(0, hint), end = Math.min(count, hint + 16); k < end; k++) {
      if (ids[k] == id) {
        return k;
      }
    }
    return find(id);
  }

  private int find(long id) {
    if (!mapped) {
      remap(Math.max(16, Integer.highestOneBit(Math.max(1, 4 * count - 1)) << 1));
    }
    int mask = keys.length - 1;
    for (int i = mix(id) & mask; at[i] != 0; i = (i + 1) & mask) {
      if (keys[i] == id) {
        return at[i] - 1;
      }
    }
    return -1;
  }

  private static int mix(long id) {
    long h = id * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  private void remap(int capacity) {
    if (keys.length < capacity) {
      keys = new long[capacity];
      at = new int[capacity];
    } else {
      Arrays.fill(at, 0);
    }
    mapped = true;
    for (int k = 0; k < count; k++) {
      put(ids[k], k);
    }
  }

  private void put(long id, int k) {
    int mask = keys.length - 1;
    int i = mix(id) & mask;
    while (at[i] != 0) {
      i = (i + 1) & mask;
    }
    keys[i] = id;
    at[i] = k + 1;
  }

  private int append(long id) {
    if (count == ids.length) {
      int n = Math.max(256, 2 * count);
      ids = Arrays.copyOf(ids, n);
      for (int t = 0; t < widths.length; t++) {
        refs[t] = Arrays.copyOf(refs[t], n);
        slots[t] = Arrays.copyOf(slots[t], n);
        grads[t] = Arrays.copyOf(grads[t], n * widths[t]);
        base[t] = Arrays.copyOf(base[t], n * widths[t]);
        before[t] = Arrays.copyOf(before[t], n * widths[t]);
      }
    }
    int j = count++;
    ids[j] = id;
    if (mapped) {
      if (2 * count > keys.length) {
        remap(2 * keys.length);
      } else {
        put(id, j);
      }
    }
    return j;
  }

  private static void addRow(float[] from, int k, float[] into, int j, int w) {
    for (int i = 0; i < w; i++) {
      into[j * w + i] += from[k * w + i];
    }
  }

  /** Finds the slots again in the tables whose layout changed since they were found. */
  private void fixSlots() {
    for (int t = 0; t < widths.length; t++) {
      long now = metas[t].layout();
      if (layouts[t] != now) {
        for (int k = 0; k < count; k++) {
          slots[t][k] = metas[t].slot(ids[k]);
        }
        layouts[t] = now;
      }
    }
  }
}
