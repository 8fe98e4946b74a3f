package dev.paramserver.trainer.pserver;

import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import java.util.Arrays;
import java.util.List;

/**
 * Where the model's blocks and rows live under one placement epoch: an immutable snapshot of the
 * trainer's {@link SlotMap}. A request is planned against one snapshot from start to end, so a map
 * replaced meanwhile (a committed move) never splits one request by two maps.
 */
public final class Routing {
  private final SlotMap map;
  private final ShardPlacement placement;
  private final int[] slotCounts;

  Routing(SlotMap map, List<BlockSpec> blocks) {
    this.map = map;
    this.placement = map.placement(blocks);
    this.slotCounts = map.slotCounts();
  }

  public SlotMap map() {
    return map;
  }

  public long epoch() {
    return map.epoch();
  }

  /** Pserver indexes 0 .. pservers-1 may own something (some may own nothing). */
  public int pservers() {
    return map.pservers();
  }

  public ShardPlacement placement() {
    return placement;
  }

  public List<BlockSpec> blocksOf(int pserver) {
    return pserver < placement.pservers() ? placement.blocksOf(pserver) : List.of();
  }

  /** The owner of dense block {@code name#block}, or -1 when the map does not place it. */
  public int ownerOfBlock(String name, int block) {
    return map.ownerOfBlock(name, block);
  }

  public int ownerOfRow(String table, long row) {
    return map.ownerOfRow(ShardPlacement.tableHash(table), row);
  }

  /**
   * True when pserver {@code ps} owns a slot or a block: a new, empty pserver (being filled by
   * moves) owns nothing and is never initialised nor pushed to by trainers.
   */
  public boolean ownsAnything(int ps) {
    if (!blocksOf(ps).isEmpty()) {
      return true;
    }
    return ps < slotCounts.length && slotCounts[ps] > 0;
  }

  /**
   * The distinct ids of {@code ids} (of table {@code table}) by the pserver that owns them: element
   * {@code ps} holds pserver {@code ps}'s ids, ascending (empty when it owns none). Primitive
   * throughout; {@code ids} is not changed.
   */
  public long[][] byOwner(String table, long[] ids) {
    int n = map.pservers();
    long[] sorted = ids.clone();
    Arrays.sort(sorted);
    int distinct = 0;
    for (int i = 0; i < sorted.length; i++) {
      if (i == 0 || sorted[i] != sorted[i - 1]) {
        sorted[distinct++] = sorted[i];
      }
    }
    long salt = ShardPlacement.tableHash(table);
    int[] owner = new int[distinct];
    int[] count = new int[n];
    for (int i = 0; i < distinct; i++) {
      owner[i] = n == 1 ? 0 : map.ownerOfRow(salt, sorted[i]);
      count[owner[i]]++;
    }
    long[][] out = new long[n][];
    for (int ps = 0; ps < n; ps++) {
      out[ps] = new long[count[ps]];
      count[ps] = 0;
    }
    for (int i = 0; i < distinct; i++) {
      out[owner[i]][count[owner[i]]++] = sorted[i];
    }
    return out;
  }

  /**
   * The ids of {@code ids}, which are distinct, by the pserver that owns them, each in the order
   * given: no sort, no copy with one pserver (element 0 is then {@code ids} itself, which neither
   * the caller nor the receiver may change).
   */
  public long[][] partition(String table, long[] ids) {
    return partition(table, ids, 0, new int[map.pservers()]);
  }

  /**
   * {@link #partition(String, long[])}, counting into {@code heldOf[ps]} how many of the first
   * {@code held} ids pserver {@code ps} owns (those come first in its part: the order is kept).
   */
  public long[][] partition(String table, long[] ids, int held, int[] heldOf) {
    int n = map.pservers();
    if (n == 1) {
      heldOf[0] = held;
      return new long[][] {ids};
    }
    long salt = ShardPlacement.tableHash(table);
    int[] owner = new int[ids.length];
    int[] count = new int[n];
    for (int i = 0; i < ids.length; i++) {
      owner[i] = map.ownerOfRow(salt, ids[i]);
      count[owner[i]]++;
      if (i < held) {
        heldOf[owner[i]]++;
      }
    }
    long[][] out = new long[n][];
    for (int ps = 0; ps < n; ps++) {
      out[ps] = new long[count[ps]];
      count[ps] = 0;
    }
    for (int i = 0; i < ids.length; i++) {
      out[owner[i]][count[owner[i]]++] = ids[i];
    }
    return out;
  }

  /**
   * The owner of every id of {@code ids} (distinct or not), into {@code owners}; returns how many
   * each pserver owns.
   */
  public int[] owners(String table, long[] ids, int count, int[] owners) {
    int n = map.pservers();
    int[] per = new int[n];
    if (n == 1) {
      Arrays.fill(owners, 0, count, 0);
      per[0] = count;
      return per;
    }
    long salt = ShardPlacement.tableHash(table);
    for (int i = 0; i < count; i++) {
      owners[i] = map.ownerOfRow(salt, ids[i]);
      per[owners[i]]++;
    }
    return per;
  }

  @Override
  public String toString() {
    return map.toString();
  }
}
