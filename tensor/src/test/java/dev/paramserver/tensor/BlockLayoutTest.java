package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.ParameterSpec;
import java.util.List;
import org.junit.jupiter.api.Test;

class BlockLayoutTest {

  @Test
  void blocks_coverTheParameterContiguously_withAShortLastBlock() {
    List<BlockSpec> blocks = BlockLayout.blocks("w", 10, 4);
    assertThat(blocks)
        .containsExactly(
            new BlockSpec("w", 0, 0, 4), new BlockSpec("w", 1, 4, 4), new BlockSpec("w", 2, 8, 2));
    assertThat(blocks.get(2).bytes()).isEqualTo(8);
    assertThat(blocks.get(2).id()).isEqualTo("w#2");
    assertThat(BlockLayout.blocks("w", 8, 4)).hasSize(2);
  }

  @Test
  void elements_multipliesTheShape_andRejectsBadShapes() {
    assertThat(BlockLayout.elements(List.of(784L, 512L))).isEqualTo(401_408);
    assertThatThrownBy(() -> BlockLayout.elements(List.of(3L, 0L)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[3, 0]");
    assertThatThrownBy(() -> BlockLayout.elements(List.of(1L << 40, 1L << 40)))
        .isInstanceOf(ArithmeticException.class);
  }

  @Test
  void blockCount_rejectsANonPositiveBlockSize() {
    assertThatThrownBy(() -> BlockLayout.blockCount(10, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("block size");
  }

  @Test
  void denseBlocks_cutEachDenseSpecByItsBlockSize_skippingSparseTables() {
    List<ParameterSpec> specs =
        List.of(
            ParameterSpec.newBuilder().setName("w").addShape(2).addShape(5).setBlockSize(4).build(),
            ParameterSpec.newBuilder()
                .setName("emb")
                .addShape(0)
                .addShape(8)
                .setSparse(true)
                .build(),
            ParameterSpec.newBuilder().setName("b").addShape(3).build());
    assertThat(BlockLayout.denseBlocks(specs))
        .containsExactly(
            new BlockSpec("w", 0, 0, 4),
            new BlockSpec("w", 1, 4, 4),
            new BlockSpec("w", 2, 8, 2),
            new BlockSpec("b", 0, 0, 3));
    assertThat(BlockLayout.blockSize(specs.get(2))).isEqualTo(BlockLayout.DEFAULT_BLOCK_SIZE);
  }
}
