package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ShardPlacementTest {

  /** Blocks of a model-like parameter list: a few big matrices, biases and an odd-sized tail. */
  private static List<BlockSpec> modelBlocks() {
    List<BlockSpec> blocks = new ArrayList<>();
    blocks.addAll(BlockLayout.blocks("embedding.w", 1_000_000, 65_536));
    blocks.addAll(BlockLayout.blocks("fc1.w", 784 * 512, 65_536));
    blocks.addAll(BlockLayout.blocks("fc1.b", 512, 65_536));
    blocks.addAll(BlockLayout.blocks("fc2.w", 512 * 10, 65_536));
    blocks.addAll(BlockLayout.blocks("fc2.b", 10, 65_536));
    return blocks;
  }

  private static Map<String, Integer> owners(ShardPlacement p) {
    Map<String, Integer> out = new HashMap<>();
    for (int s = 0; s < p.pservers(); s++) {
      for (BlockSpec b : p.blocksOf(s)) {
        assertThat(out.put(b.id(), s)).as("block %s placed twice", b.id()).isNull();
      }
    }
    return out;
  }

  @Test
  void place_sameInput_givesSamePlacement_whateverTheListOrder() {
    List<BlockSpec> blocks = modelBlocks();
    Map<String, Integer> first = owners(ShardPlacement.place(blocks, 3));
    assertThat(owners(ShardPlacement.place(blocks, 3))).isEqualTo(first);
    Random random = new Random(42);
    for (int i = 0; i < 5; i++) {
      List<BlockSpec> shuffled = new ArrayList<>(blocks);
      Collections.shuffle(shuffled, random);
      assertThat(owners(ShardPlacement.place(shuffled, 3))).isEqualTo(first);
    }
  }

  @Test
  void place_everyBlockIsPlacedExactlyOnce_andOwnerAgreesWithBlocksOf() {
    List<BlockSpec> blocks = modelBlocks();
    for (int n = 1; n <= 7; n++) {
      ShardPlacement p = ShardPlacement.place(blocks, n);
      Map<String, Integer> owners = owners(p);
      assertThat(owners.keySet())
          .containsExactlyInAnyOrderElementsOf(blocks.stream().map(BlockSpec::id).toList());
      for (BlockSpec b : blocks) {
        assertThat(p.owner(b.name(), b.block())).isEqualTo(owners.get(b.id())).isBetween(0, n - 1);
      }
    }
  }

  @Test
  void place_loadsDifferByAtMostTheLargestBlock_andAddUpToTheTotal() {
    Random random = new Random(7);
    for (int round = 0; round < 50; round++) {
      List<BlockSpec> blocks = new ArrayList<>();
      int params = 1 + random.nextInt(20);
      for (int i = 0; i < params; i++) {
        blocks.addAll(BlockLayout.blocks("p" + i, 1 + random.nextInt(200_000), 16_384));
      }
      int n = 1 + random.nextInt(8);
      ShardPlacement p = ShardPlacement.place(blocks, n);
      long largest = blocks.stream().mapToLong(BlockSpec::bytes).max().orElseThrow();
      long total = blocks.stream().mapToLong(BlockSpec::bytes).sum();
      long max = Long.MIN_VALUE;
      long min = Long.MAX_VALUE;
      long sum = 0;
      for (int s = 0; s < n; s++) {
        long placed = p.blocksOf(s).stream().mapToLong(BlockSpec::bytes).sum();
        assertThat(p.bytesOf(s)).isEqualTo(placed);
        max = Math.max(max, placed);
        min = Math.min(min, placed);
        sum += placed;
      }
      assertThat(sum).isEqualTo(total);
      assertThat(max - min).as("round %d: %d pservers", round, n).isLessThanOrEqualTo(largest);
    }
  }

  @Test
  void place_equalBlocks_spreadEvenly() {
    List<BlockSpec> blocks = BlockLayout.blocks("w", 12L * 1024, 1024);
    ShardPlacement p = ShardPlacement.place(blocks, 4);
    for (int s = 0; s < 4; s++) {
      assertThat(p.blocksOf(s)).hasSize(3);
    }
  }

  @Test
  void place_morePserversThanBlocks_leavesTheRestEmpty() {
    ShardPlacement p = ShardPlacement.place(BlockLayout.blocks("w", 10, 4), 5);
    assertThat(p.pservers()).isEqualTo(5);
    int used = 0;
    for (int s = 0; s < 5; s++) {
      assertThat(p.blocksOf(s)).hasSizeLessThanOrEqualTo(1);
      used += p.blocksOf(s).size();
    }
    assertThat(used).isEqualTo(3);
  }

  @Test
  void blocksOf_isOrderedByNameThenBlock_andUnmodifiable() {
    ShardPlacement p = ShardPlacement.place(modelBlocks(), 2);
    for (int s = 0; s < 2; s++) {
      List<BlockSpec> list = p.blocksOf(s);
      for (int i = 1; i < list.size(); i++) {
        BlockSpec a = list.get(i - 1);
        BlockSpec b = list.get(i);
        int byName = a.name().compareTo(b.name());
        assertThat(byName < 0 || (byName == 0 && a.block() < b.block()))
            .as("%s before %s", a.id(), b.id())
            .isTrue();
      }
      assertThatThrownBy(() -> list.add(new BlockSpec("x", 0, 0, 1)))
          .isInstanceOf(UnsupportedOperationException.class);
    }
  }

  @Test
  void place_rejectsBadInput_withAMessageNamingTheProblem() {
    assertThatThrownBy(() -> ShardPlacement.place(modelBlocks(), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one pserver");
    List<BlockSpec> twice = new ArrayList<>(BlockLayout.blocks("w", 10, 4));
    twice.add(new BlockSpec("w", 1, 4, 4));
    assertThatThrownBy(() -> ShardPlacement.place(twice, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("w#1")
        .hasMessageContaining("twice");
    ShardPlacement p = ShardPlacement.place(BlockLayout.blocks("w", 10, 4), 2);
    assertThatThrownBy(() -> p.owner("w", 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("w#3");
  }

  @Test
  void ownerOfRow_isDeterministic_inRange_andSpreadsRows() {
    int n = 4;
    int[] counts = new int[n];
    Set<Integer> seen = new HashSet<>();
    for (long row = -5_000; row < 15_000; row++) {
      int owner = ShardPlacement.ownerOfRow("emb", row, n);
      assertThat(owner).isBetween(0, n - 1).isEqualTo(ShardPlacement.ownerOfRow("emb", row, n));
      counts[owner]++;
      seen.add(owner);
    }
    assertThat(seen).hasSize(n);
    for (int c : counts) {
      assertThat(c).as("rows per pserver %s", Arrays.toString(counts)).isBetween(4_000, 6_000);
    }
    assertThat(ShardPlacement.ownerOfRow("emb", 123, 1)).isZero();
  }
}
