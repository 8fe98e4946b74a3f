package dev.paramserver.pserver.replication.harness;

import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The move simulation's check of where things are once the placement settled: the committed map is
 * whole (the grow ended balanced: no move left to make), every dense block is held by the pserver
 * that owns it in the map, and no pserver holds a block or a row of a slot that the map gives
 * another (a slot served by two pservers).
 */
final class MoveState {
  private MoveState() {}

  /**
   * The violations of {@code states} (the shards serving each index) against {@code map}, the
   * committed map, which must be the balanced map of {@code pservers}.
   */
  static List<String> ownership(
      MoveHistory history, SlotMap map, Map<Integer, ShardCheckpoint> states, int pservers) {
    List<String> violations = new ArrayList<>();
    if (!map.movesTo(map.resized(pservers), 1 << 20).isEmpty()) {
      violations.add(
          "PLACEMENT: the committed map is not the balanced map of " + pservers + ": " + map);
    }
    long table = ShardPlacement.tableHash(MoveHistory.EMB);
    for (BlockSpec b : history.blocks()) {
      int owner = map.ownerOfBlock(MoveHistory.ID, b.block());
      ShardCheckpoint s = states.get(owner);
      if (s == null
          || s.getBlocksList().stream()
              .noneMatch(x -> x.getName().equals(MoveHistory.ID) && x.getBlock() == b.block())) {
        violations.add("MISSING: block " + b.block() + " of its owner " + owner);
      }
    }
    states.forEach(
        (index, s) -> {
          for (BlockCheckpoint x : s.getBlocksList()) {
            int owner = map.ownerOfBlock(x.getName(), x.getBlock());
            if (owner != index) {
              violations.add(
                  "TWO OWNERS: pserver "
                      + index
                      + " holds block "
                      + x.getName()
                      + "/"
                      + x.getBlock()
                      + " of pserver "
                      + owner);
            }
          }
          for (SparseTableCheckpoint t : s.getSparseTablesList()) {
            for (long id : t.getRowIdsList()) {
              int owner = map.ownerOfRow(table, id);
              if (owner != index) {
                violations.add(
                    "TWO OWNERS: pserver "
                        + index
                        + " holds row "
                        + id
                        + " of slot "
                        + map.slotOf(table, id)
                        + ", which pserver "
                        + owner
                        + " owns");
              }
            }
          }
        });
    return violations;
  }
}
