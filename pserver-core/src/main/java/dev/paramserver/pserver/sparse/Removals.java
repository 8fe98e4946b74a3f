package dev.paramserver.pserver.sparse;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The rows removed while one record is applied: recorded on a primary (every removal by the cap or
 * the TTL, where it happened), followed on its backup (exactly those removals, no decision of its
 * own). Bound to the applying thread from {@link #recording} or {@link #following} to {@link #end}.
 */
public final class Removals {
  /** Where a removal happened in an update; see {@code RowRemoval} in checkpoint.proto. */
  public static final int EXPIRED = 1;

  public static final int ROOM = 2;
  public static final int SWEEP = 3;

  /**
   * One removal: {@code update} counts the store's updates within the record, {@code position} is
   * the row of that update's batch being applied.
   */
  public record Removal(SparseRowStore store, int update, int position, int phase, long id) {}

  private record Point(SparseRowStore store, int update, int position, int phase) {}

  private static final ThreadLocal<Removals> CURRENT = new ThreadLocal<>();

  static Removals current() {
    return CURRENT.get();
  }

  boolean follows() {
    return follow;
  }

  /** True when this trace follows and none of its removals is still to be made. */
  boolean removesNothing() {
    return follow && script.isEmpty();
  }

  private final boolean follow;
  private final List<Removal> recorded = new ArrayList<>();
  private final Map<Point, List<Long>> script = new HashMap<>();
  private final Map<SparseRowStore, Integer> updates = new IdentityHashMap<>();

  private Removals(boolean follow) {
    this.follow = follow;
  }

  /** Records the removals of the stores' updates on this thread until {@link #end}. */
  public static Removals recording() {
    Removals r = new Removals(false);
    CURRENT.set(r);
    return r;
  }

  /** Makes exactly {@code removals} (and no other) on this thread until {@link #end}. */
  public static Removals following(List<Removal> removals) {
    Removals r = new Removals(true);
    for (Removal x : removals) {
      r.script
          .computeIfAbsent(
              new Point(x.store, x.update, x.position, x.phase), k -> new ArrayList<>())
          .add(x.id);
    }
    CURRENT.set(r);
    return r;
  }

  public static void end() {
    CURRENT.remove();
  }

  /** What was recorded, in order. */
  public List<Removal> recorded() {
    return List.copyOf(recorded);
  }

  int beginUpdate(SparseRowStore store) {
    return updates.merge(store, 1, Integer::sum) - 1;
  }

  /** Records a removal when {@code trace} records (nothing when it is null or follows). */
  static void add(
      Removals trace, SparseRowStore store, int update, int position, int phase, long id) {
    if (trace != null && !trace.follow) {
      trace.recorded.add(new Removal(store, update, position, phase, id));
    }
  }

  List<Long> at(SparseRowStore store, int update, int position, int phase) {
    if (script.isEmpty()) {
      // most records remove nothing: no key per row and phase (it was most of what a read
      // replica's follower allocated)
      return List.of();
    }
    List<Long> ids = script.remove(new Point(store, update, position, phase));
    return ids == null ? List.of() : ids;
  }

  /**
   * A backup removes the rows its primary removed (a row of another stripe under that stripe's
   * lock: a backup applies one record at a time and serves no call, so nothing waits the other way
   * round).
   */
  static void removeAll(SparseRowStore store, Stripe s, List<Long> removed) {
    for (long id : removed) {
      Stripe t = store.stripe(id);
      if (t != s) {
        t.lock.writeLock().lock();
      }
      try {
        int slot = t.index.get(id);
        if (slot >= 0) {
          store.remove(t, slot);
        }
      } finally {
        if (t != s) {
          t.lock.writeLock().unlock();
        }
      }
    }
  }
}
