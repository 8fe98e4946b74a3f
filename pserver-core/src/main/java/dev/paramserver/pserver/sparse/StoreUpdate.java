package dev.paramserver.pserver.sparse;

import java.util.Arrays;

/**
 * One call of {@link SparseRowStore#update(long[], SparseRowStore.RowUpdate, byte[])}: its scratch
 * rows and what it decided so far. Its store's stripes are locked and changed through the store.
 */
final class StoreUpdate {
  final SparseRowStore store;
  final long[] ids;
  final SparseRowStore.RowUpdate update;
  final byte[] after;
  final long[] pinned;
  final Removals trace;
  final boolean follow;
  final int call;
  final long now;
  final float[] values;
  final float[][] slots;
  // the writer tag the rows updated get (0: none), and with one and an answer, per position of ids
  // whether the row's previous update carried the same tag (scratch of this thread, cleared)
  final int writer;
  final boolean[] mine;
  int applied;
  // whether an id may occur more than once in ids (then the answer's repeats are settled)
  boolean mayRepeat = true;
  // whether ids repeat an id (found once the answer's repeats were settled)
  boolean repeated;
  // keeps the loads that touch rows ahead of their update from being optimised away
  int sink;

  StoreUpdate(
      SparseRowStore store,
      long[] ids,
      SparseRowStore.RowUpdate update,
      byte[] after,
      boolean evicts,
      Removals trace,
      int writer) {
    this.store = store;
    this.writer = writer;
    this.mine = writer != 0 && after != null ? SCRATCH.get().mine(ids.length) : null;
    this.values = new float[store.width];
    this.slots = new float[store.slotInit.length][store.width];
    this.ids = ids;
    this.update = update;
    this.after = after;
    long[] p = null;
    if (evicts) {
      p = ids.clone();
      Arrays.sort(p);
    }
    this.pinned = p;
    this.trace = trace;
    this.follow = trace != null && trace.follows();
    this.call = trace == null ? 0 : trace.beginUpdate(store);
    this.now = store.clock.getAsLong();
  }

  /**
   * Applies {@code update} to {@code ids} in {@code store} (see {@link
   * SparseRowStore#update(long[], SparseRowStore.RowUpdate, byte[])}) as writer {@code writer} (0:
   * none).
   */
  static StoreUpdate run(
      SparseRowStore store, long[] ids, SparseRowStore.RowUpdate update, byte[] after, int writer) {
    Removals trace = Removals.current();
    boolean evicts = store.settings.capped() || store.settings.policy().expires();
    StoreUpdate a = new StoreUpdate(store, ids, update, after, evicts, trace, writer);
    boolean byStripe = trace != null && trace.follows() ? trace.removesNothing() : !evicts;
    if (byStripe) {
      a.byStripe();
    } else {
      a.inOrder();
    }
    if (after != null && a.mayRepeat) {
      a.repeated = RepeatedIds.settle(ids, after, store.width * Float.BYTES);
    }
    return a;
  }

  /** Row by row in the order of the ids, each under its stripe's lock. */
  void inOrder() {
    for (int i = 0; i < ids.length; i++) {
      long id = ids[i];
      long h = LongSlotIndex.mix(id);
      Stripe s = store.stripes[store.stripeOf(h)];
      s.lock.writeLock().lock();
      try {
        row(s, id, h, i, s.index.get(id, h));
      } finally {
        s.lock.writeLock().unlock();
      }
    }
  }

  /** Stripe by stripe: each stripe's rows in the order of the ids, under one hold of its lock. */
  void byStripe() {
    int n = ids.length;
    int stripeCount = store.stripes.length;
    Scratch scratch = SCRATCH.get().ensure(n);
    long[] hashes = scratch.hashes;
    int[] order = scratch.order;
    int[] found = scratch.found;
    int[] start = new int[stripeCount + 1];
    for (int i = 0; i < n; i++) {
      long h = LongSlotIndex.mix(ids[i]);
      hashes[i] = h;
      start[store.stripeOf(h) + 1]++;
    }
    for (int st = 0; st < stripeCount; st++) {
      start[st + 1] += start[st];
    }
    int[] next = Arrays.copyOf(start, stripeCount);
    for (int i = 0; i < n; i++) {
      order[next[store.stripeOf(hashes[i])]++] = i;
    }
    int touched = 0;
    boolean repeats = false;
    for (int st = 0; st < stripeCount; st++) {
      if (start[st] == start[st + 1]) {
        continue;
      }
      Stripe s = store.stripes[st];
      s.lock.writeLock().lock();
      try {
        // Three passes over the run, each of loads independent of each other, so that their
        // cache misses overlap instead of queueing behind each row's chain of dependent loads:
        // the rows' home buckets, then the probes (each reads its id beside the row), touching
        // the rows' values, update counts and metadata, then the updates. The slots stay valid
        // meanwhile (this path never removes a row).
        for (int k = start[st]; k < start[st + 1]; k++) {
          touched += s.index.home(hashes[order[k]]);
        }
        for (int k = start[st]; k < start[st + 1]; k++) {
          int i = order[k];
          int slot = s.index.get(ids[i], hashes[i]);
          found[k] = slot;
          if (slot >= 0) {
            touched += s.slab.touch(slot);
          }
        }
        // an id occurs once per stripe run it belongs to, so repeats show within a run
        repeats = repeats || (after != null && scratch.repeats(found, start[st], start[st + 1]));
        for (int k = start[st]; k < start[st + 1]; k++) {
          int i = order[k];
          row(s, ids[i], hashes[i], i, found[k]);
        }
      } finally {
        s.lock.writeLock().unlock();
      }
    }
    sink = touched;
    mayRepeat = repeats;
  }

  /**
   * Updates row {@code i} (id {@code id}, hash {@code h}) found at {@code slot} by a probe since
   * which nothing was removed (-1: absent then; looked up again, an earlier row of the call may
   * have added it); the caller holds its stripe.
   */
  private void row(Stripe s, long id, long h, int i, int found) {
    int slot = found >= 0 ? found : s.index.get(id, h);
    if (follow) {
      if (slot >= 0 && trace.at(store, call, i, Removals.EXPIRED).contains(id)) {
        store.remove(s, slot);
        slot = -1;
      }
    } else if (slot >= 0 && store.settings.policy().expired(s.slab.meta(slot), now)) {
      Removals.add(trace, store, call, i, Removals.EXPIRED, id);
      store.remove(s, slot);
      slot = -1;
    }
    if (slot < 0) {
      if (s.sketch != null && !s.sketch.admit(id)) {
        store.refused.increment();
        if (after != null) {
          store.init.fill(id, values, 0);
          answer(i);
        }
        return;
      }
      if (follow) {
        Removals.removeAll(store, s, trace.at(store, call, i, Removals.ROOM));
      } else {
        store.makeRoom(s, pinned, now, trace, call, i);
      }
      slot = store.insert(s, id, now);
    }
    float[] chunk = s.slab.floatChunk(slot);
    int o = s.slab.offset(slot);
    System.arraycopy(chunk, o, values, 0, store.width);
    for (int k = 0; k < slots.length; k++) {
      System.arraycopy(chunk, o + (k + 1) * store.width, slots[k], 0, store.width);
    }
    int before = s.slab.updates(slot);
    update.apply(i, values, slots, Integer.toUnsignedLong(before));
    System.arraycopy(values, 0, chunk, o, store.width);
    for (int k = 0; k < slots.length; k++) {
      System.arraycopy(slots[k], 0, chunk, o + (k + 1) * store.width, store.width);
    }
    // Saturates: past 2^32 - 1 updates bias corrections are long since 1.
    s.slab.setUpdates(slot, before == -1 ? before : before + 1);
    if (mine != null && s.slab.writer(slot) == writer) {
      mine[i] = true;
    }
    s.slab.setWriter(slot, writer);
    s.slab.setMeta(slot, store.settings.policy().updated(s.slab.meta(slot), now));
    applied++;
    if (after != null) {
      answer(i);
    }
    if (follow) {
      Removals.removeAll(store, s, trace.at(store, call, i, Removals.SWEEP));
    } else if (store.settings.policy().expires()) {
      store.expireSome(pinned, now, trace, call, i);
    }
  }

  /**
   * Moves the answer's rows whose previous update carried another writer tag to its front, in the
   * order of the ids, and writes their positions to {@code kept}; returns how many.
   */
  int cutAnswer(int[] kept) {
    int rowBytes = store.width * Float.BYTES;
    int n = 0;
    for (int i = 0; i < ids.length; i++) {
      if (!mine[i]) {
        if (n != i) {
          System.arraycopy(after, i * rowBytes, after, n * rowBytes, rowBytes);
        }
        kept[n++] = i;
      }
    }
    return n;
  }

  /** Writes {@link #values} as row {@code i} of the answer. */
  private void answer(int i) {
    int at = i * store.width * Float.BYTES;
    for (int k = 0; k < store.width; k++) {
      FLOATS_LE.set(after, at + k * Float.BYTES, values[k]);
    }
  }

  /** Per-thread arrays of {@link #byStripe}, grown to the largest update seen. */
  private static final class Scratch {
    long[] hashes = new long[0];
    int[] order = new int[0];
    int[] found = new int[0];
    private boolean[] mine = new boolean[0];
    private int[] seenSlots = new int[0];
    private int[] seenStamps = new int[0];
    private int stamp;

    /**
     * Whether the probes {@code found[from..to)} of one stripe run may hold an id twice: two that
     * found the same slot, or two that found none (absent ids, maybe the same).
     */
    boolean repeats(int[] found, int from, int to) {
      int n = to - from;
      if (n < 2) {
        return false;
      }
      int capacity = Integer.highestOneBit(2 * n - 1) << 1;
      if (seenSlots.length < capacity) {
        seenSlots = new int[capacity];
        seenStamps = new int[capacity];
        stamp = 0;
      }
      if (++stamp == Integer.MAX_VALUE) {
        Arrays.fill(seenStamps, 0);
        stamp = 1;
      }
      int mask = capacity - 1;
      int shift = Integer.numberOfLeadingZeros(mask);
      int absent = 0;
      for (int k = from; k < to; k++) {
        int slot = found[k];
        if (slot < 0) {
          if (++absent > 1) {
            return true;
          }
          continue;
        }
        int b = (slot * 0x9E3779B9) >>> shift;
        while (seenStamps[b] == stamp) {
          if (seenSlots[b] == slot) {
            return true;
          }
          b = (b + 1) & mask;
        }
        seenSlots[b] = slot;
        seenStamps[b] = stamp;
      }
      return false;
    }

    /** {@code n} flags, all false. */
    boolean[] mine(int n) {
      if (mine.length < n) {
        mine = new boolean[n];
      } else {
        Arrays.fill(mine, 0, n, false);
      }
      return mine;
    }

    Scratch ensure(int n) {
      if (hashes.length < n) {
        hashes = new long[n];
        order = new int[n];
        found = new int[n];
      }
      return this;
    }
  }

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  private static final java.lang.invoke.VarHandle FLOATS_LE =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
          float[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
}
