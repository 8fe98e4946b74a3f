package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.SlotMove;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SlotMapTest {

  private static List<BlockSpec> blocks(int count, Random random) {
    List<BlockSpec> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      out.add(new BlockSpec("p" + (i % 7), i, 0, 1 + random.nextInt(1 << 18)));
    }
    return out;
  }

  @Test
  void initialMapRoutesAsTheFixedRule() {
    Random random = new Random(7);
    List<BlockSpec> dense = blocks(40, random);
    for (int n = 1; n <= 7; n++) {
      SlotMap map = SlotMap.initial(dense, n);
      assertThat(map.slots() % n).isZero();
      assertThat(map.slots()).isGreaterThanOrEqualTo(SlotMap.MIN_SLOTS);
      ShardPlacement fixed = ShardPlacement.place(dense, n);
      for (BlockSpec b : dense) {
        assertThat(map.ownerOfBlock(b.name(), b.block()))
            .isEqualTo(fixed.owner(b.name(), b.block()));
      }
      for (String table : List.of("emb", "user_id", "")) {
        long h = ShardPlacement.tableHash(table);
        for (int i = 0; i < 5000; i++) {
          long row = random.nextLong();
          assertThat(map.ownerOfRow(h, row)).isEqualTo(ShardPlacement.ownerOfRow(table, row, n));
        }
      }
    }
  }

  @Test
  void growingMovesAboutOneShareOfTheBytes() {
    Random random = new Random(11);
    List<BlockSpec> dense = blocks(64, random);
    for (int n = 1; n <= 6; n++) {
      SlotMap map = SlotMap.initial(dense, n);
      SlotMap next = map.resized(n + 1);
      assertThat(next.epoch()).isEqualTo(1);
      assertThat(next.pservers()).isEqualTo(n + 1);
      int movedSlots = 0;
      for (int s = 0; s < map.slots(); s++) {
        if (map.ownerOfSlot(s) != next.ownerOfSlot(s)) {
          movedSlots++;
          assertThat(next.ownerOfSlot(s)).isEqualTo(n);
        }
      }
      double slotShare = (double) movedSlots / map.slots();
      assertThat(slotShare).isLessThanOrEqualTo(1.0 / (n + 1));
      assertThat(slotShare).isGreaterThan(0.99 / (n + 1) - 1.0 / map.slots());
      long total = 0;
      long moved = 0;
      for (BlockSpec b : dense) {
        total += b.bytes();
        if (map.ownerOfBlock(b.name(), b.block()) != next.ownerOfBlock(b.name(), b.block())) {
          moved += b.bytes();
        }
      }
      assertThat((double) moved / total).isLessThanOrEqualTo(1.1 / (n + 1));
      int[] counts = next.slotCounts();
      for (int c : counts) {
        assertThat(c).isBetween(map.slots() / (n + 1) - 1, map.slots() / (n + 1) + 2);
      }
    }
  }

  @Test
  void shrinkingEmptiesTheRemovedIndexAndMovesNothingElse() {
    Random random = new Random(3);
    List<BlockSpec> dense = blocks(30, random);
    SlotMap three = SlotMap.initial(dense, 2).resized(3);
    SlotMap two = three.resized(2);
    assertThat(two.pservers()).isEqualTo(2);
    for (int s = 0; s < three.slots(); s++) {
      if (three.ownerOfSlot(s) < 2) {
        assertThat(two.ownerOfSlot(s)).isEqualTo(three.ownerOfSlot(s));
      } else {
        assertThat(two.ownerOfSlot(s)).isLessThan(2);
      }
    }
    for (BlockSpec b : dense) {
      int before = three.ownerOfBlock(b.name(), b.block());
      if (before < 2) {
        assertThat(two.ownerOfBlock(b.name(), b.block())).isEqualTo(before);
      }
    }
  }

  @Test
  void movesApplyOneAtATimeToTheNextMap() {
    Random random = new Random(5);
    List<BlockSpec> dense = blocks(20, random);
    SlotMap start = SlotMap.initial(dense, 2);
    SlotMap target = start.resized(3);
    List<SlotMove> moves = start.movesTo(target, 256);
    assertThat(moves).isNotEmpty();
    SlotMap cur = start;
    for (SlotMove m : moves) {
      assertThat(m.getSlotsCount()).isLessThanOrEqualTo(256);
      assertThat(m.getTo()).isEqualTo(2);
      cur = cur.with(m.toBuilder().setEpoch(cur.epoch() + 1).build());
    }
    assertThat(cur.pservers()).isEqualTo(3);
    for (int s = 0; s < start.slots(); s++) {
      assertThat(cur.ownerOfSlot(s)).isEqualTo(target.ownerOfSlot(s));
    }
    for (BlockSpec b : dense) {
      assertThat(cur.ownerOfBlock(b.name(), b.block()))
          .isEqualTo(target.ownerOfBlock(b.name(), b.block()));
    }
    // and back: the last move drops index 2
    SlotMap back = cur.resized(2);
    for (SlotMove m : cur.movesTo(back, 256)) {
      assertThat(m.getFrom()).isEqualTo(2);
      cur = cur.with(m.toBuilder().setEpoch(cur.epoch() + 1).build());
    }
    assertThat(cur.pservers()).isEqualTo(2);
    assertThat(SlotMap.fromProto(cur.toProto()).toProto()).isEqualTo(cur.toProto());
  }

  @Test
  void aGrowCutShortAfterItsFirstMove_isFinishedByResizingToTheSameCountAgain() {
    Random random = new Random(11);
    List<BlockSpec> dense = blocks(20, random);
    SlotMap start = SlotMap.initial(dense, 2);
    SlotMap target = start.resized(3);
    List<SlotMove> moves = start.movesTo(target, 2048);
    assertThat(moves.size()).isGreaterThan(1);
    // the first move committed, the second rolled back: the map already counts 3 pservers
    SlotMap partial = start.with(moves.get(0).toBuilder().setEpoch(1).build());
    assertThat(partial.pservers()).isEqualTo(3);
    SlotMap finished = partial.resized(3);
    assertThat(partial.movesTo(finished, 2048)).as("the rest of the grow").isNotEmpty();
    int[] counts = finished.slotCounts();
    int base = start.slots() / 3;
    for (int c : counts) {
      assertThat(c).isBetween(base, base + 1);
    }
    assertThat(finished.slotCounts()).isEqualTo(target.slotCounts());
    long[] bytes = new long[3];
    for (BlockSpec b : dense) {
      bytes[finished.ownerOfBlock(b.name(), b.block())] += 4L * b.length();
    }
    assertThat(bytes[2]).as("the new index got dense blocks").isPositive();
    // nothing moved between the two old indexes
    for (int s = 0; s < start.slots(); s++) {
      if (finished.ownerOfSlot(s) != 2) {
        assertThat(finished.ownerOfSlot(s)).isEqualTo(start.ownerOfSlot(s));
      }
    }
    for (BlockSpec b : dense) {
      int now = finished.ownerOfBlock(b.name(), b.block());
      if (now != 2) {
        assertThat(now).isEqualTo(start.ownerOfBlock(b.name(), b.block()));
      }
    }
    // a balanced map resized to its own count does not change
    assertThat(finished.movesTo(finished.resized(3), 2048)).isEmpty();
    assertThat(target.movesTo(target.resized(3), 2048)).isEmpty();
    SlotMap two = target.resized(2);
    assertThat(two.movesTo(two.resized(2), 2048)).isEmpty();
  }

  @Test
  void aBadMapIsRefusedNamingTheProblem() {
    SlotMap map = SlotMap.initial(List.of(), 2);
    var bad = map.toProto().toBuilder().setSlotOwners(5, 9).build();
    assertThatThrownBy(() -> SlotMap.fromProto(bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("slot 5 to pserver 9 of 2");
    var short1 = map.toProto().toBuilder().setSlots(100).build();
    assertThatThrownBy(() -> SlotMap.fromProto(short1)).hasMessageContaining("slot owners");
  }
}
