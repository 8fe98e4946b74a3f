package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
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

  @Test
  void initialRouting_isTheFixedRule() {
    Model model =
        ModelFactory.create(new ModelSpec("sparse-lr", 50, 2, List.of(), Mlp.Activation.RELU, 4));
    ModelLayout layout = new ModelLayout(model, 8, SGD, 3);
    ShardPlacement fixed = ShardPlacement.place(layout.blocks(), 3);
    assertThat(layout.routing().epoch()).isZero();
    for (int ps = 0; ps < 3; ps++) {
      assertThat(layout.blocksOf(ps)).containsExactlyInAnyOrderElementsOf(fixed.blocksOf(ps));
    }
    for (long row = -500; row < 5000; row += 7) {
      assertThat(layout.ownerOfRow("emb", row)).isEqualTo(ShardPlacement.ownerOfRow("emb", row, 3));
    }
  }

  @Test
  void update_routesByANewerEpochOnly() throws InterruptedException {
    Model model =
        ModelFactory.create(new ModelSpec("sparse-lr", 50, 2, List.of(), Mlp.Activation.RELU, 4));
    ModelLayout layout = new ModelLayout(model, 8, SGD, 2);
    SlotMap grown = SlotMap.initial(layout.blocks(), 2).resized(3);
    Routing before = layout.routing();

    assertThat(layout.update(grown)).isTrue();
    assertThat(layout.pservers()).isEqualTo(3);
    assertThat(layout.routing().epoch()).isEqualTo(1);
    assertThat(layout.awaitEpoch(1, 0)).isTrue();
    long[][] byOwner = layout.byOwner("emb", java.util.stream.LongStream.range(0, 3000).toArray());
    assertThat(byOwner).hasNumberOfRows(3);
    assertThat(byOwner[2]).as("rows of the new pserver's slots").isNotEmpty();
    // the snapshot taken before stays as it was: a request planned by it is planned by one map
    assertThat(before.pservers()).isEqualTo(2);

    assertThat(layout.update(SlotMap.initial(layout.blocks(), 2))).as("an older epoch").isFalse();
    assertThat(layout.pservers()).isEqualTo(3);
    assertThat(layout.awaitEpoch(2, 50)).isFalse();
  }

  @Test
  void aTrainerStartingWhileTheJobIsScaled_takesTheCommittedMapOfTheJobsSlotCount() {
    Model model =
        ModelFactory.create(new ModelSpec("sparse-lr", 50, 2, List.of(), Mlp.Activation.RELU, 4));
    // the job started with 2 pservers and grew to 3; a trainer starting now finds 3
    ModelLayout layout = new ModelLayout(model, 8, SGD, 3);
    SlotMap committed = SlotMap.initial(layout.blocks(), 2).resized(3);
    assertThat(committed.slots()).isNotEqualTo(SlotMap.slotsFor(3));

    assertThat(layout.update(committed)).isTrue();
    assertThat(layout.routing().map().slots()).isEqualTo(committed.slots());
    long salt = ShardPlacement.tableHash("emb");
    for (long row = 0; row < 2000; row += 3) {
      assertThat(layout.ownerOfRow("emb", row)).isEqualTo(committed.ownerOfRow(salt, row));
    }
  }

  @Test
  void update_refusesAMapOfAnotherModel() {
    ModelLayout layout =
        new ModelLayout(new Mlp("mlp", 64, 5, List.of(32), Mlp.Activation.TANH), 100, SGD, 2);
    ModelLayout other =
        new ModelLayout(new Mlp("mlp", 64, 5, List.of(16), Mlp.Activation.TANH), 100, SGD, 2);
    SlotMap foreign = SlotMap.initial(other.blocks(), 2).resized(3);
    assertThatThrownBy(() -> layout.update(foreign))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not place the model's");
    assertThat(layout.pservers()).isEqualTo(2);
  }
}
