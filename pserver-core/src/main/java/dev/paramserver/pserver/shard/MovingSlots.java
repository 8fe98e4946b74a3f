package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.tensor.SlotMap;
import java.util.BitSet;
import java.util.HashSet;
import java.util.Set;

/**
 * The row slots and dense blocks of one {@link SlotMove}, as sets a push or pull is checked against
 * in a few operations per row. Immutable.
 */
public final class MovingSlots {
  private final SlotMove move;
  private final BitSet slots = new BitSet();
  private final Set<String> blocks = new HashSet<>();

  public MovingSlots(SlotMove move) {
    if (move.getSlotCount() <= 0 && move.getSlotsCount() > 0) {
      throw new IllegalArgumentException(
          "move " + move.getId() + " names slots but not the placement's slot count");
    }
    this.move = move;
    for (int s : move.getSlotsList()) {
      slots.set(s);
    }
    for (BlockRef b : move.getBlocksList()) {
      blocks.add(DenseBlock.key(b.getName(), b.getBlock()));
    }
  }

  public SlotMove move() {
    return move;
  }

  public long epoch() {
    return move.getEpoch();
  }

  public int from() {
    return move.getFrom();
  }

  public int to() {
    return move.getTo();
  }

  public String id() {
    return move.getId();
  }

  public int slotCount() {
    return slots.cardinality();
  }

  public int blockCount() {
    return blocks.size();
  }

  boolean hasSlot(int slot) {
    return slots.get(slot);
  }

  /** Whether row {@code row} of the table with routing hash {@code tableHash} moves. */
  boolean hasRow(long tableHash, long row) {
    return move.getSlotCount() > 0
        && slots.get(SlotMap.slotOf(tableHash, row, move.getSlotCount()));
  }

  boolean hasBlock(String name, int block) {
    return blocks.contains(DenseBlock.key(name, block));
  }

  @Override
  public String toString() {
    return "move "
        + move.getId()
        + " ("
        + move.getFrom()
        + " -> "
        + move.getTo()
        + ", epoch "
        + move.getEpoch()
        + ", "
        + slots.cardinality()
        + " slots, "
        + blocks.size()
        + " blocks)";
  }
}
