package dev.paramserver.trainer.training;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;

/**
 * The distinct sparse ids of the batches being planned and trained, each found once, with the slot
 * every cached table found each id at: a batch is planned ahead ({@link RowCache#wanted} with
 * {@code ahead}) and readied later from the same {@code Batch.sparseIds()} array, which reuses both
 * (the slots while their table's layout is unchanged, see {@link RowMeta#layout}), so a row is
 * looked up in the cache once per batch rather than once per occurrence and pass. Training thread
 * only.
 */
final class BatchIds {
  /**
   * The ids of one batch: distinct, in the order of their first occurrence (a distinct id's
   * position is its batch-local index), and the local index of each occurrence.
   */
  static final class Entry {
    final long[] ids;
    final long[] distinct;
    final int[] local;
    // per table: the slot of each distinct id, valid while that table's layout is layouts[t]
    final int[][] slots;
    final long[] layouts;

    Entry(long[] ids, long[] distinct, int[] local, int tables) {
      this.ids = ids;
      this.distinct = distinct;
      this.local = local;
      this.slots = new int[tables][distinct.length];
      this.layouts = new long[tables];
      Arrays.fill(layouts, -1);
    }
  }

  private final int tables;
  private final int keep;
  private final Deque<Entry> recent = new ArrayDeque<>();
  // a scratch set: a key is present when its stamp is the current one (no clearing per batch)
  private long[] keys = new long[1024];
  private int[] index = new int[1024];
  private int[] stamps = new int[1024];
  private int stamp;

  /**
   * @param tables the cached tables (each keeps its own slots)
   * @param keep how many batches' ids are kept (those planned ahead and the one under way)
   */
  BatchIds(int tables, int keep) {
    this.tables = tables;
    this.keep = Math.max(1, keep);
  }

  /** The entry of the batch whose ids are {@code ids} (the same array), found or made. */
  Entry of(long[] ids) {
    for (Entry e : recent) {
      if (e.ids == ids) {
        return e;
      }
    }
    int[] local = new int[ids.length];
    Entry e = new Entry(ids, distinct(ids, local), local, tables);
    recent.addLast(e);
    while (recent.size() > keep) {
      recent.pollFirst();
    }
    return e;
  }

  /** The distinct values of {@code ids}, in the order of their first occurrence. */
  long[] distinct(long[] ids) {
    return distinct(ids, new int[ids.length]);
  }

  /**
   * The distinct values of {@code ids}, in the order of their first occurrence; {@code local[k]}
   * becomes the position of {@code ids[k]} among them.
   */
  long[] distinct(long[] ids, int[] local) {
    if (keys.length < 2 * ids.length) {
      int n = Integer.highestOneBit(Math.max(1, 2 * ids.length - 1)) << 1;
      keys = new long[n];
      index = new int[n];
      stamps = new int[n];
      stamp = 0;
    }
    if (++stamp == 0) {
      Arrays.fill(stamps, 0);
      stamp = 1;
    }
    int mask = keys.length - 1;
    long[] out = new long[ids.length];
    int n = 0;
    for (int k = 0; k < ids.length; k++) {
      long id = ids[k];
      long h = id * 0x9E3779B97F4A7C15L;
      int i = (int) (h ^ (h >>> 32)) & mask;
      while (stamps[i] == stamp && keys[i] != id) {
        i = (i + 1) & mask;
      }
      if (stamps[i] != stamp) {
        stamps[i] = stamp;
        keys[i] = id;
        index[i] = n;
        out[n++] = id;
      }
      local[k] = index[i];
    }
    return n == out.length ? out : Arrays.copyOf(out, n);
  }
}
