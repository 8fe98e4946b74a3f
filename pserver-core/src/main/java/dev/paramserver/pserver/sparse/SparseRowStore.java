package dev.paramserver.pserver.sparse;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The rows of one sparse table in primitive storage: up to {@value #STRIPES} stripes, each an
 * open-addressing index over a chunked slab under its own read-write lock. Pulls of different rows
 * proceed in parallel (read lock); a push holds its row's stripe exclusively while it updates the
 * row, so concurrent pushes of a row never lose an update.
 *
 * <p>With a cap ({@link TableSettings#maxRows}, or a shared {@link SparseBudget}) adding a row to a
 * full table first evicts up to two rows of the same stripe, each the lowest scored of {@link
 * TableSettings#sample} random rows, never one of the ids of the batch being applied: an insert
 * does a bounded amount of work and never waits for anything but its stripe's lock. When every
 * sampled row is pinned by the batch, the first unpinned row after a random one goes (at most the
 * batch's size plus one rows looked at). Only when the stripe holds nothing but the batch's rows,
 * or another stripe's lock is taken, does the table go over the cap for a while; the following
 * inserts bring it back.
 *
 * <p>With an admission threshold an id without a row gets one only at its threshold-th push; the
 * earlier pushes of it are dropped (and counted), and pulls of it read the row's initial values.
 * Pulls never create rows.
 *
 * <p>A backup removes exactly the rows its primary removed, and decides none itself ({@link
 * Removals}); the admission sketch travels in copies and checkpoints ({@link TableSketch}).
 */
public final class SparseRowStore {
  static final int STRIPES = 32;

  /** Bytes per row besides the floats: id, update count, eviction word, writer, index share. */
  static final int ROW_OVERHEAD_BYTES = 8 + 4 + 4 + 4 + 8;

  /** The initial values of a row (deterministic per id). */
  public interface RowInit {
    void fill(long id, float[] out, int offset);
  }

  /** Updates one row of a batch in place; {@code index} is the row's position in the batch. */
  public interface RowUpdate {
    void apply(int index, float[] values, float[][] slots, long updatesBefore);
  }

  /**
   * A piece of the table copied for a snapshot; arrays hold {@code rows} entries. {@code scores}
   * are the eviction policy's scores of the rows at the time of the copy.
   */
  public record Chunk(
      long[] ids, float[] values, float[][] slots, long[] updates, long[] scores, int rows) {}

  /** A row {@link #put} without an eviction score: it scores as a row created now. */
  public static final long NO_SCORE = Long.MIN_VALUE;

  /** Receives snapshot chunks. */
  public interface ChunkSink {
    void accept(Chunk chunk);
  }

  final int width;
  final float[] slotInit;
  final RowInit init;
  final TableSettings settings;
  final LongSupplier clock;
  private final long rowBytes;
  final Stripe[] stripes;
  private final AtomicInteger sweep = new AtomicInteger();
  private final AtomicLong rows = new AtomicLong();
  private final LongAdder evictions = new LongAdder();
  final LongAdder refused = new LongAdder();

  /**
   * @param slotInit the initial value of each optimizer slot (its length is the slot count)
   * @param clock nanoseconds, for the eviction policy
   */
  public SparseRowStore(
      int width, float[] slotInit, RowInit init, TableSettings settings, LongSupplier clock) {
    if (width < 1) {
      throw new IllegalArgumentException("width must be >= 1, got " + width);
    }
    this.width = width;
    this.slotInit = slotInit.clone();
    this.init = init;
    this.settings = settings;
    this.clock = clock;
    int stride = width * (1 + slotInit.length);
    this.rowBytes = ROW_OVERHEAD_BYTES + 4L * stride;
    // A small capped table gets fewer stripes, so that each stripe has rows to evict.
    int n =
        (int)
            Math.max(
                1, Math.min(STRIPES, Long.highestOneBit(Math.max(1, settings.maxRows() / 64))));
    this.stripes = new Stripe[n];
    int sketchWidth = Math.max(1, settings.sketchWidth() / n);
    for (int i = 0; i < n; i++) {
      stripes[i] =
          new Stripe(
              i,
              stride,
              settings.admissionThreshold() > 1
                  ? new AdmissionSketch(sketchWidth, settings.admissionThreshold())
                  : null);
    }
  }

  public int width() {
    return width;
  }

  public int slots() {
    return slotInit.length;
  }

  /** Rows held. */
  public long rows() {
    return rows.get();
  }

  /** Bytes a row counts against a cap. */
  public long rowBytes() {
    return rowBytes;
  }

  /** Bytes of primitive storage allocated (slabs, indexes, sketches). */
  public long bytes() {
    long n = 0;
    for (Stripe s : stripes) {
      s.lock.readLock().lock();
      try {
        n += s.slab.allocatedBytes() + s.index.bytes();
        n += s.sketch == null ? 0 : s.sketch.bytes();
      } finally {
        s.lock.readLock().unlock();
      }
    }
    return n;
  }

  /** Rows dropped by the cap or expired (TTL) since the table was created. */
  public long evictions() {
    return evictions.sum();
  }

  /** Row pushes dropped because their id was below the admission threshold. */
  public long admissionsRefused() {
    return refused.sum();
  }

  public TableSettings settings() {
    return settings;
  }

  Stripe stripe(long id) {
    return stripes[stripeOf(LongSlotIndex.mix(id))];
  }

  /**
   * Copies the values of row {@code id} (its initial values if it has no row) to {@code out}.
   *
   * @return false when the table holds no row {@code id} (the initial values were copied)
   */
  public boolean read(long id, float[] out, int offset) {
    return read(id, out, offset, 0) == READ_ROW;
  }

  /** {@link #read(long, float[], int, int)}: the row's values were copied. */
  public static final int READ_ROW = 1;

  /** {@link #read(long, float[], int, int)}: the row's last update carried the tag: not copied. */
  public static final int UNCHANGED = -1;

  /**
   * {@link #read(long, float[], int)}, except that with {@code writer} not 0 a row whose last
   * update carried that writer tag ({@link RowSlab#writer}) is not copied.
   *
   * @return {@link #READ_ROW}, {@link #UNCHANGED}, or 0: no row, its initial values were copied
   */
  public int read(long id, float[] out, int offset, int writer) {
    Stripe s = stripe(id);
    s.lock.readLock().lock();
    try {
      int slot = s.index.get(id);
      // only a policy whose rows expire reads the row's metadata and the clock (two loads a row)
      EvictionPolicy p = settings.policy();
      if (slot >= 0 && (!p.expires() || !p.expired(s.slab.meta(slot), clock.getAsLong()))) {
        if (writer != 0 && s.slab.writer(slot) == writer) {
          return UNCHANGED;
        }
        System.arraycopy(s.slab.floatChunk(slot), s.slab.offset(slot), out, offset, width);
        return READ_ROW;
      }
    } finally {
      s.lock.readLock().unlock();
    }
    init.fill(id, out, offset);
    return 0;
  }

  /**
   * Applies {@code update} to each row of {@code ids} in turn, creating rows as needed (subject to
   * admission and the cap). Rows refused admission are skipped.
   *
   * @return how many rows were updated
   */
  public int update(long[] ids, RowUpdate update) {
    return update(ids, update, null);
  }

  /**
   * {@link #update(long[], RowUpdate)}, and with {@code after} not null also the answer of the
   * update in the same probe of each row: the values of row {@code ids[i]} right after this call
   * updated it (float32, little-endian) at {@code after[i * width * 4]}; a row refused admission
   * reads as its initial values, and a repeated id reads as after its last occurrence. The clock is
   * read once per call. In a table that neither evicts nor expires rows, the rows are applied
   * stripe by stripe, each stripe's rows in the order of {@code ids} under one hold of its lock
   * (the order of the rows of one stripe, and so every admission decision, is that of {@code ids};
   * rows of different stripes are independent). A backup or read replica following a record that
   * removed no row applies it the same way, whatever the table's policy: with no removal to make
   * where its primary made it, only the order within a stripe matters.
   *
   * @param after {@code ids.length * width * 4} bytes, or null for no answer
   * @return how many rows were updated
   */
  public int update(long[] ids, RowUpdate update, byte[] after) {
    return StoreUpdate.run(this, ids, update, after, 0).applied;
  }

  /**
   * {@link #update(long[], RowUpdate, byte[])} by the writer tagged {@code writer} (not 0, see
   * {@link RowSlab#writer}), the answer cut to the rows whose previous update carried another tag
   * or none (and those created or refused admission): moved to the front of {@code after} in the
   * order of {@code ids}, their positions written to {@code kept} (as long as {@code ids}).
   *
   * @return how many rows the answer keeps, or -1 when {@code ids} repeats an id (it keeps all)
   */
  public int update(long[] ids, RowUpdate update, byte[] after, int writer, int[] kept) {
    if (writer == 0 || after == null) {
      throw new IllegalArgumentException("an answer cut to the rows changed needs a writer tag");
    }
    StoreUpdate a = StoreUpdate.run(this, ids, update, after, writer);
    return a.repeated ? -1 : a.cutAnswer(kept);
  }

  int stripeOf(long hash) {
    return (int) (hash >>> 58) & (stripes.length - 1);
  }

  /**
   * Puts a row as it is (a checkpoint being restored), evicting if the table is full.
   *
   * @param score the row's eviction score when it was copied ({@link Chunk#scores}), or {@link
   *     #NO_SCORE}
   */
  public void put(long id, float[] values, float[][] rowSlots, long updates, long score) {
    Stripe s = stripe(id);
    s.lock.writeLock().lock();
    try {
      long now = clock.getAsLong();
      int slot = s.index.get(id);
      if (slot < 0) {
        makeRoom(s, null, now, null, 0, 0);
        slot = insert(s, id, now);
      }
      float[] chunk = s.slab.floatChunk(slot);
      int o = s.slab.offset(slot);
      System.arraycopy(values, 0, chunk, o, width);
      for (int k = 0; k < slotInit.length; k++) {
        System.arraycopy(rowSlots[k], 0, chunk, o + (k + 1) * width, width);
      }
      s.slab.setUpdates(slot, (int) Math.min(updates, 0xFFFF_FFFFL));
      s.slab.setWriter(slot, 0);
      if (score != NO_SCORE) {
        s.slab.setMeta(slot, settings.policy().restored(score, now));
      }
    } finally {
      s.lock.writeLock().unlock();
    }
  }

  /**
   * Copies the table out in chunks of at most {@code chunkRows} rows, one stripe at a time: each
   * stripe is copied under its read lock (pushes to it wait for the copy, not for the sink), so the
   * memory needed is one stripe's rows, not the table's.
   */
  public void snapshot(int chunkRows, ChunkSink sink) {
    Chunks.snapshot(
        stripes, settings.policy(), clock.getAsLong(), chunkRows, width, slotInit, sink);
  }

  /** The admission sketch of every stripe, or null without admission ({@link TableSketch#of}). */
  public TableSketch sketch() {
    return TableSketch.of(stripes);
  }

  /**
   * Takes a saved sketch when it has this table's shape (see {@link TableSketch#restore}).
   *
   * @return whether it was taken
   */
  public boolean restoreSketch(List<byte[]> counters, List<Long> increments) {
    return TableSketch.restore(stripes, counters, increments);
  }

  /** Drops the rows {@code drop} accepts (slots moved away; not evictions); returns how many. */
  public long removeIf(java.util.function.LongPredicate drop) {
    return MovedRows.remove(stripes, drop, this::remove, evictions);
  }

  /** Drops every row and gives their bytes back to the shared budget. */
  public void clear() {
    for (Stripe s : stripes) {
      s.lock.writeLock().lock();
      try {
        int n = s.slab.size();
        s.slab.clear();
        s.index.clear();
        rows.addAndGet(-n);
        release(n);
      } finally {
        s.lock.writeLock().unlock();
      }
    }
  }

  private void release(int n) {
    SparseBudget b = settings.budget();
    if (b != null) {
      b.add(-n * rowBytes);
    }
  }

  int insert(Stripe s, long id, long now) {
    int slot = s.slab.add(id);
    s.index.put(id, slot);
    float[] chunk = s.slab.floatChunk(slot);
    int o = s.slab.offset(slot);
    init.fill(id, chunk, o);
    for (int k = 0; k < slotInit.length; k++) {
      if (slotInit[k] != 0) {
        Arrays.fill(chunk, o + (k + 1) * width, o + (k + 2) * width, slotInit[k]);
      }
    }
    s.slab.setUpdates(slot, 0);
    s.slab.setMeta(slot, settings.policy().created(now));
    s.slab.setWriter(slot, 0);
    rows.incrementAndGet();
    SparseBudget b = settings.budget();
    if (b != null) {
      b.add(rowBytes);
    }
    return slot;
  }

  void remove(Stripe s, int slot) {
    long id = s.slab.key(slot);
    s.index.remove(id);
    int last = s.slab.size() - 1;
    if (slot != last) {
      // Repoint the last row's id before its row moves (the index reads ids from the slab).
      s.index.move(s.slab.key(last), slot);
    }
    s.slab.removeByMovingLast(slot);
    rows.decrementAndGet();
    release(1);
    evictions.increment();
  }

  private boolean full() {
    SparseBudget b = settings.budget();
    return rows.get() >= settings.maxRows() || (b != null && b.full(rowBytes));
  }

  /**
   * Evicts up to two rows while the table is full: from {@code s} (whose write lock the caller
   * holds) or, when it has no candidate, from another stripe whose lock is free right now.
   */
  void makeRoom(Stripe s, long[] pinned, long now, Removals trace, int call, int position) {
    for (int round = 0; round < 2 && full(); round++) {
      int victim = pickVictim(s, pinned, now);
      if (victim >= 0) {
        Removals.add(trace, this, call, position, Removals.ROOM, s.slab.key(victim));
        remove(s, victim);
      } else if (!evictElsewhere(s, pinned, now, trace, call, position)) {
        return;
      }
    }
  }

  private boolean evictElsewhere(
      Stripe s, long[] pinned, long now, Removals trace, int call, int position) {
    for (int j = 1; j < stripes.length; j++) {
      Stripe other = stripes[(s.number + j) & (stripes.length - 1)];
      // tryLock only: waiting for a second stripe while holding one could deadlock.
      if (other.slab.size() > 0 && other.lock.writeLock().tryLock()) {
        try {
          int victim = pickVictim(other, pinned, now);
          if (victim >= 0) {
            Removals.add(trace, this, call, position, Removals.ROOM, other.slab.key(victim));
            remove(other, victim);
            return true;
          }
        } finally {
          other.lock.writeLock().unlock();
        }
      }
    }
    return false;
  }

  private int pickVictim(Stripe s, long[] pinned, long now) {
    int n = s.slab.size();
    if (n == 0) {
      return -1;
    }
    ThreadLocalRandom random = ThreadLocalRandom.current();
    int best = -1;
    long bestScore = Long.MAX_VALUE;
    for (int i = 0; i < settings.sample(); i++) {
      int slot = random.nextInt(n);
      if (pinned != null && Arrays.binarySearch(pinned, s.slab.key(slot)) >= 0) {
        continue;
      }
      long score = settings.policy().score(s.slab.meta(slot), now);
      if (score < bestScore) {
        best = slot;
        bestScore = score;
      }
    }
    return best >= 0 || pinned == null ? best : firstUnpinned(s, pinned, random.nextInt(n));
  }

  /**
   * Every sampled row was pinned by the batch: the first row from {@code start} on that is not. At
   * most {@code pinned.length} rows are pinned, so this looks at no more than one row past them.
   */
  private static int firstUnpinned(Stripe s, long[] pinned, int start) {
    int n = s.slab.size();
    for (int i = 0; i < Math.min(n, pinned.length + 1); i++) {
      int slot = (start + i) % n;
      if (Arrays.binarySearch(pinned, s.slab.key(slot)) < 0) {
        return slot;
      }
    }
    return -1;
  }

  /** TTL: looks at two rows of the next stripe in turn (if its lock is free) to expire them. */
  void expireSome(long[] pinned, long now, Removals trace, int call, int position) {
    Stripe s = stripes[sweep.getAndIncrement() & (stripes.length - 1)];
    if (!s.lock.writeLock().tryLock()) {
      return;
    }
    try {
      for (int i = 0; i < 2; i++) {
        int n = s.slab.size();
        if (n == 0) {
          return;
        }
        int slot = s.cursor = (s.cursor + 1) % n;
        if (settings.policy().expired(s.slab.meta(slot), now)
            && (pinned == null || Arrays.binarySearch(pinned, s.slab.key(slot)) < 0)) {
          Removals.add(trace, this, call, position, Removals.SWEEP, s.slab.key(slot));
          remove(s, slot);
        }
      }
    } finally {
      s.lock.writeLock().unlock();
    }
  }
}
