package dev.paramserver.tensor;

import dev.paramserver.proto.v1.BlockOwner;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.SlotMove;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Elastic placement: sparse rows map to a fixed number of slots by their id's hash, and slots and
 * dense blocks map to pserver indexes under a placement epoch. The initial map (epoch 0) of N
 * pservers routes exactly as {@link ShardPlacement} does: dense blocks by its size-balanced rule,
 * and rows to {@code ownerOfRow(table, row, N)}, because the slot count is a multiple of N and a
 * slot {@code s} starts on {@code s mod N}.
 *
 * <p>Immutable; {@link #resized} plans the next map, moving as few slots and bytes as it can.
 */
public final class SlotMap {
  /** The fewest row slots a map has (as Redis Cluster): the real count is a multiple of N0. */
  public static final int MIN_SLOTS = 16_384;

  private final long epoch;
  private final int pservers;
  private final int[] slotOwner;
  // name#block -> owner, in the order given
  private final Map<String, BlockOwner> blocks;

  private SlotMap(long epoch, int pservers, int[] slotOwner, Map<String, BlockOwner> blocks) {
    this.epoch = epoch;
    this.pservers = pservers;
    this.slotOwner = slotOwner;
    this.blocks = blocks;
  }

  /**
   * The slot count of a job that starts with {@code pservers}: a multiple of it, at least 16384.
   */
  public static int slotsFor(int pservers) {
    if (pservers <= 0) {
      throw new IllegalArgumentException("need at least one pserver, got " + pservers);
    }
    return pservers * ((MIN_SLOTS + pservers - 1) / pservers);
  }

  /** The initial map (epoch 0) of {@code pservers}: the fixed rule's placement. */
  public static SlotMap initial(List<BlockSpec> dense, int pservers) {
    int slots = slotsFor(pservers);
    int[] owners = new int[slots];
    for (int s = 0; s < slots; s++) {
      owners[s] = s % pservers;
    }
    ShardPlacement placement = ShardPlacement.place(dense, pservers);
    Map<String, BlockOwner> blocks = new LinkedHashMap<>();
    for (BlockSpec b : dense) {
      blocks.put(
          b.id(),
          BlockOwner.newBuilder()
              .setName(b.name())
              .setBlock(b.block())
              .setOwner(placement.owner(b.name(), b.block()))
              .setBytes(b.bytes())
              .build());
    }
    return new SlotMap(0, pservers, owners, blocks);
  }

  /**
   * A map read from etcd.
   *
   * @throws IllegalArgumentException when it is inconsistent (an owner out of range, a slot count
   *     that does not match), naming the problem
   */
  public static SlotMap fromProto(PlacementMap map) {
    int n = map.getPservers();
    if (n <= 0) {
      throw new IllegalArgumentException("placement epoch " + map.getEpoch() + " has no pservers");
    }
    if (map.getSlots() <= 0 || map.getSlotOwnersCount() != map.getSlots()) {
      throw new IllegalArgumentException(
          "placement epoch "
              + map.getEpoch()
              + " lists "
              + map.getSlotOwnersCount()
              + " slot owners for "
              + map.getSlots()
              + " slots");
    }
    int[] owners = new int[map.getSlots()];
    for (int s = 0; s < owners.length; s++) {
      owners[s] = map.getSlotOwners(s);
      if (owners[s] >= n) {
        throw new IllegalArgumentException(
            "placement epoch "
                + map.getEpoch()
                + " gives slot "
                + s
                + " to pserver "
                + owners[s]
                + " of "
                + n);
      }
    }
    Map<String, BlockOwner> blocks = new LinkedHashMap<>();
    for (BlockOwner b : map.getDenseOwnersList()) {
      if (b.getOwner() >= n) {
        throw new IllegalArgumentException(
            "placement epoch "
                + map.getEpoch()
                + " gives block "
                + b.getName()
                + "#"
                + b.getBlock()
                + " to pserver "
                + b.getOwner()
                + " of "
                + n);
      }
      blocks.put(b.getName() + "#" + b.getBlock(), b);
    }
    return new SlotMap(map.getEpoch(), n, owners, blocks);
  }

  public PlacementMap toProto() {
    PlacementMap.Builder b =
        PlacementMap.newBuilder().setEpoch(epoch).setPservers(pservers).setSlots(slotOwner.length);
    for (int o : slotOwner) {
      b.addSlotOwners(o);
    }
    b.addAllDenseOwners(blocks.values());
    return b.build();
  }

  public long epoch() {
    return epoch;
  }

  public int pservers() {
    return pservers;
  }

  public int slots() {
    return slotOwner.length;
  }

  /** The owner of slot {@code slot}. */
  public int ownerOfSlot(int slot) {
    return slotOwner[slot];
  }

  /** The slot of row {@code row} of the table whose {@link ShardPlacement#tableHash} is given. */
  public static int slotOf(long tableHash, long row, int slots) {
    long h = row * 0x9E3779B97F4A7C15L ^ tableHash;
    h ^= h >>> 31;
    return (int) Math.floorMod(h, (long) slots);
  }

  public int slotOf(long tableHash, long row) {
    return slotOf(tableHash, row, slotOwner.length);
  }

  /** The pserver that owns row {@code row} of the table with hash {@code tableHash}. */
  public int ownerOfRow(long tableHash, long row) {
    return slotOwner[slotOf(tableHash, row, slotOwner.length)];
  }

  /** The pserver that owns a dense block, or -1 when the map does not place it. */
  public int ownerOfBlock(String name, int block) {
    BlockOwner b = blocks.get(name + "#" + block);
    return b == null ? -1 : b.getOwner();
  }

  /** Whether the map places every block of {@code dense} (and only those). */
  public boolean places(List<BlockSpec> dense) {
    if (dense.size() != blocks.size()) {
      return false;
    }
    for (BlockSpec b : dense) {
      if (!blocks.containsKey(b.id())) {
        return false;
      }
    }
    return true;
  }

  /** The dense blocks as a {@link ShardPlacement} (the blocks each pserver serves). */
  public ShardPlacement placement(List<BlockSpec> dense) {
    return ShardPlacement.assigned(
        dense,
        pservers,
        b -> {
          int o = ownerOfBlock(b.name(), b.block());
          if (o < 0) {
            throw new IllegalArgumentException(
                "placement epoch " + epoch + " does not place block " + b.id());
          }
          return o;
        });
  }

  /** Slots owned by each pserver. */
  public int[] slotCounts() {
    int[] c = new int[pservers];
    for (int o : slotOwner) {
      c[o]++;
    }
    return c;
  }

  /**
   * The next map (epoch + 1) for {@code n} pservers. Growing gives the new indexes slots from the
   * pservers holding the most, until each holds {@code slots / n} (within one), and dense blocks
   * (largest first) while the new index stays at or under its share of the dense bytes. Shrinking
   * gives the removed indexes' slots and blocks to those holding the fewest. Nothing else moves. An
   * index holding fewer than {@code slots / n} slots is treated as new: a grow whose moves were cut
   * short (one rolled back after the first committed, the count already {@code n}) is finished by
   * resizing to {@code n} again; a balanced map resized to its own count does not change.
   */
  public SlotMap resized(int n) {
    if (n <= 0) {
      throw new IllegalArgumentException("need at least one pserver, got " + n);
    }
    if (n > slotOwner.length) {
      throw new IllegalArgumentException(
          "at most " + slotOwner.length + " pservers (one a slot), asked for " + n);
    }
    int[] owners = slotOwner.clone();
    int[] count = new int[Math.max(n, pservers)];
    for (int o : owners) {
      count[o]++;
    }
    // rows: removed indexes give every slot to the one holding the fewest
    for (int s = 0; s < owners.length; s++) {
      if (owners[s] >= n) {
        count[owners[s]]--;
        owners[s] = fewest(count, n);
        count[owners[s]]++;
      }
    }
    // new indexes, and any holding fewer than its share (a grow cut short by a failed move), take
    // slots from the one holding the most (its highest slots first)
    int base = owners.length / n;
    boolean[] receiver = new boolean[n];
    for (int to = 0; to < n; to++) {
      receiver[to] = to >= pservers || count[to] < base;
    }
    for (int to = 0; to < n; to++) {
      while (receiver[to] && count[to] < base) {
        int from = most(count, n);
        for (int s = owners.length - 1; s >= 0; s--) {
          if (owners[s] == from) {
            owners[s] = to;
            count[from]--;
            count[to]++;
            break;
          }
        }
      }
    }
    Map<String, BlockOwner> next = new LinkedHashMap<>(blocks);
    long[] bytes = new long[Math.max(n, pservers)];
    long total = 0;
    for (BlockOwner b : blocks.values()) {
      bytes[b.getOwner()] += b.getBytes();
      total += b.getBytes();
    }
    List<BlockOwner> bySize = new ArrayList<>(blocks.values());
    bySize.sort(
        Comparator.comparingLong(BlockOwner::getBytes)
            .reversed()
            .thenComparing(BlockOwner::getName)
            .thenComparingInt(BlockOwner::getBlock));
    for (BlockOwner b : bySize) {
      if (b.getOwner() >= n) {
        int to = fewestBytes(bytes, n);
        move(next, bytes, b, to);
      }
    }
    long share = total / n;
    for (int to = 0; to < n; to++) {
      if (!receiver[to]) {
        continue;
      }
      for (BlockOwner b : bySize) {
        BlockOwner cur = next.get(b.getName() + "#" + b.getBlock());
        int from = cur.getOwner();
        if (from >= n || receiver[from] || bytes[to] + b.getBytes() > share) {
          continue;
        }
        // take it only from a pserver above its share, and never leave it below
        if (bytes[from] - b.getBytes() >= share) {
          move(next, bytes, cur, to);
        }
      }
    }
    return new SlotMap(epoch + 1, n, owners, next);
  }

  private static void move(Map<String, BlockOwner> map, long[] bytes, BlockOwner b, int to) {
    bytes[b.getOwner()] -= b.getBytes();
    bytes[to] += b.getBytes();
    map.put(b.getName() + "#" + b.getBlock(), b.toBuilder().setOwner(to).build());
  }

  private static int fewest(int[] count, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
      if (count[i] < count[best]) {
        best = i;
      }
    }
    return best;
  }

  private static int most(int[] count, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
      if (count[i] > count[best]) {
        best = i;
      }
    }
    return best;
  }

  private static int fewestBytes(long[] bytes, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
      if (bytes[i] < bytes[best]) {
        best = i;
      }
    }
    return best;
  }

  /**
   * What changes owner from this map to {@code next}: one move per (from, to) pair, each cut into
   * moves of at most {@code maxSlots} slots (blocks go with the first cut of their pair, one block
   * a move when a pair has no slots), in the order to be made. Each move's epoch is left 0: the
   * coordinator numbers them as it commits them.
   */
  public List<SlotMove> movesTo(SlotMap next, int maxSlots) {
    if (next.slotOwner.length != slotOwner.length) {
      throw new IllegalArgumentException(
          "maps of " + slotOwner.length + " and " + next.slotOwner.length + " slots");
    }
    Map<Long, List<Integer>> slotsByPair = new LinkedHashMap<>();
    for (int s = 0; s < slotOwner.length; s++) {
      if (slotOwner[s] != next.slotOwner[s]) {
        slotsByPair
            .computeIfAbsent(pair(slotOwner[s], next.slotOwner[s]), k -> new ArrayList<>())
            .add(s);
      }
    }
    Map<Long, List<BlockRef>> blocksByPair = new HashMap<>();
    for (BlockOwner b : blocks.values()) {
      int to = next.ownerOfBlock(b.getName(), b.getBlock());
      if (to >= 0 && to != b.getOwner()) {
        blocksByPair
            .computeIfAbsent(pair(b.getOwner(), to), k -> new ArrayList<>())
            .add(BlockRef.newBuilder().setName(b.getName()).setBlock(b.getBlock()).build());
        slotsByPair.putIfAbsent(pair(b.getOwner(), to), new ArrayList<>());
      }
    }
    List<SlotMove> moves = new ArrayList<>();
    for (Map.Entry<Long, List<Integer>> e : slotsByPair.entrySet()) {
      int from = (int) (e.getKey() >>> 32);
      int to = (int) (long) e.getKey();
      List<Integer> slots = e.getValue();
      List<BlockRef> refs = blocksByPair.getOrDefault(e.getKey(), List.of());
      int cuts = Math.max((slots.size() + maxSlots - 1) / maxSlots, refs.size());
      for (int c = 0; c < cuts; c++) {
        SlotMove.Builder m =
            SlotMove.newBuilder().setFrom(from).setTo(to).setSlotCount(slotOwner.length);
        for (int i = c * maxSlots; i < Math.min(slots.size(), (c + 1) * maxSlots); i++) {
          m.addSlots(slots.get(i));
        }
        if (c < refs.size()) {
          m.addBlocks(refs.get(c));
        }
        moves.add(m.build());
      }
    }
    return moves;
  }

  /**
   * This map with one move applied and the epoch set to the move's. The pserver count is one more
   * than the highest index that owns something: a shrink's last move drops the emptied indexes.
   */
  public SlotMap with(SlotMove move) {
    int[] owners = slotOwner.clone();
    for (int s : move.getSlotsList()) {
      owners[s] = move.getTo();
    }
    Map<String, BlockOwner> next = new LinkedHashMap<>(blocks);
    for (BlockRef r : move.getBlocksList()) {
      BlockOwner b = next.get(r.getName() + "#" + r.getBlock());
      if (b == null) {
        throw new IllegalArgumentException(
            "move " + move.getId() + " names block " + r.getName() + "#" + r.getBlock());
      }
      next.put(r.getName() + "#" + r.getBlock(), b.toBuilder().setOwner(move.getTo()).build());
    }
    int n = 0;
    for (int o : owners) {
      n = Math.max(n, o + 1);
    }
    for (BlockOwner b : next.values()) {
      n = Math.max(n, b.getOwner() + 1);
    }
    return new SlotMap(move.getEpoch(), n, owners, next);
  }

  private static long pair(int from, int to) {
    return ((long) from << 32) | (to & 0xffffffffL);
  }

  @Override
  public String toString() {
    return "placement epoch "
        + epoch
        + " of "
        + pservers
        + " pservers, "
        + slotOwner.length
        + " slots";
  }
}
