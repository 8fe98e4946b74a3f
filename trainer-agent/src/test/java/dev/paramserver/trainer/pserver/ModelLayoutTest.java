package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Mlp;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.tensor.BlockSpec;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ModelLayoutTest {
  private static final OptimizerConfig SGD =
      OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(0.1f).build();

  @Test
  void everyBlockIsPlacedOnceAndBytesAreBalanced() {
    Mlp mlp = new Mlp("mlp", 300, 10, List.of(200, 100), Mlp.Activation.RELU);
    ModelLayout layout = new ModelLayout(mlp, 4096, SGD, 3);
    Set<String> seen = new HashSet<>();
    long total = 0;
    long max = 0;
    long min = Long.MAX_VALUE;
    for (int ps = 0; ps < 3; ps++) {
      long bytes = 0;
      for (BlockSpec b : layout.blocksOf(ps)) {
        assertThat(seen.add(b.id())).as("block %s placed twice", b.id()).isTrue();
        bytes += b.bytes();
      }
      total += bytes;
      max = Math.max(max, bytes);
      min = Math.min(min, bytes);
    }
    long params = 300 * 200 + 200 + 200 * 100 + 100 + 100 * 10 + 10;
    assertThat(total).isEqualTo(4 * params);
    // greedy largest-first keeps shards within one block of each other
    assertThat(max - min).isLessThanOrEqualTo(4 * 4096);
    assertThat(layout.specs()).hasSize(6);
    assertThat(layout.specs().get(0).getBlockSize()).isEqualTo(4096);
  }

  @Test
  void placementIsDeterministic() {
    Mlp mlp = new Mlp("mlp", 64, 5, List.of(32), Mlp.Activation.TANH);
    ModelLayout a = new ModelLayout(mlp, 100, SGD, 2);
    ModelLayout b = new ModelLayout(mlp, 100, SGD, 2);
    for (int ps = 0; ps < 2; ps++) {
      assertThat(a.blocksOf(ps)).isEqualTo(b.blocksOf(ps));
    }
  }
}
