package dev.paramserver.serving.replica;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class PlacementSwitchTest {
  private static final int WIDTH = 2;
  private static final long HASH = ShardPlacement.tableHash("emb");
  private static final ParameterSpec EMB =
      ParameterSpec.newBuilder()
          .setName("emb")
          .addShape(0)
          .addShape(WIDTH)
          .setDtype(DataType.FLOAT32)
          .setSparse(true)
          .setOptimizer(
              OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(1f))
          .build();

  private final AtomicReference<SlotMap> committed = new AtomicReference<>();
  private final AtomicInteger followed = new AtomicInteger();
  private final PlacementSwitch.Source source =
      new PlacementSwitch.Source() {
        @Override
        public Optional<SlotMap> committed() {
          return Optional.ofNullable(committed.get());
        }

        @Override
        public AutoCloseable watch(Runnable onChange) {
          return () -> {};
        }
      };

  /** A primary of {@code n} whose every row of ids 0..49 it owns under {@code map} is {@code v}. */
  private static ParameterShard primary(int index, SlotMap map, int n, float v) {
    ParameterShard s = new ParameterShard(true);
    s.init(
        InitParametersRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId("i1")
            .addParameters(EMB)
            .build());
    s.finishInit(FinishInitRequest.newBuilder().setTrainerId("t0").setInitId("i1").build());
    SparseRows.Builder rows = SparseRows.newBuilder().setName("emb").setDtype(DataType.FLOAT32);
    List<Float> g = new ArrayList<>();
    for (long id = 0; id < 50; id++) {
      int owner = map == null ? ShardPlacement.ownerOfRow(HASH, id, n) : map.ownerOfRow(HASH, id);
      if (owner == index) {
        rows.addRowIds(id);
        g.add(-v);
        g.add(-v);
      }
    }
    float[] grad = new float[g.size()];
    for (int i = 0; i < grad.length; i++) {
      grad[i] = g.get(i);
    }
    rows.setData(TensorCodec.encode(grad));
    s.push(PushGradientsRequest.newBuilder().setTrainerId("t0").addSparseGradients(rows).build());
    return s;
  }

  private static float[] lookup(ServedModel model, long id) {
    return model.read(
        ServedVersion.Minimum.ANY,
        Duration.ZERO,
        v -> {
          float[] out = new float[WIDTH];
          v.row("emb", HASH, id, out, 0);
          return out;
        });
  }

  private static ServedModel.Copy copy(ParameterShard s) {
    return new ServedModel.Copy(7, s.snapshot());
  }

  @Test
  void aGrowIsServedOnlyOnceEveryShardThatGainedHoldsACopyCutAfterTheCommit() {
    ServedModel model = new ServedModel("r", 2);
    for (int i = 0; i < 2; i++) {
      model.install(i, 7, primary(i, null, 2, 1f).snapshot());
    }
    PlacementSwitch placements = new PlacementSwitch(model, source, followed::set);
    SlotMap grown = SlotMap.initial(List.of(), 2).resized(3);
    committed.set(grown);
    placements.refresh();

    // from the initial map every shard takes a copy; a third one is followed
    assertThat(followed.get()).isEqualTo(3);
    assertThat(List.of(0, 1, 2)).allMatch(placements::wants);
    long before = model.version().number();
    assertThat(placements.stage(0, copy(primary(0, grown, 3, 2f)), 0, 0))
        .as("asked for before epoch 1 was known")
        .isFalse();
    assertThat(placements.stage(0, copy(primary(0, grown, 3, 2f)), 1, 1)).isTrue();
    assertThat(placements.stage(1, copy(primary(1, grown, 3, 2f)), 0, 1)).isTrue();
    // still the old map and copies: every row of the first version
    assertThat(model.placementEpoch()).isZero();
    assertThat(model.version().number()).isEqualTo(before);
    assertThat(lookup(model, 3)).containsExactly(1f, 1f);
    assertThat(placements.wants(2)).isTrue();
    assertThat(placements.wants(0)).isFalse();

    assertThat(placements.stage(2, copy(primary(2, grown, 3, 2f)), 1, 1)).isTrue();
    assertThat(model.placementEpoch()).isEqualTo(1);
    assertThat(model.shardCount()).isEqualTo(3);
    assertThat(model.version().placementEpoch()).isEqualTo(1);
    assertThat(model.version().number()).isEqualTo(before + 1);
    for (long id = 0; id < 50; id++) {
      assertThat(lookup(model, id)).as("row %d at its new owner", id).containsExactly(2f, 2f);
    }
    assertThat(placements.settled(2, 1)).isTrue();
  }

  @Test
  void aCopyCutAtANewerEpochThanTheTarget_plansTheSwitchToIt() {
    ServedModel model = new ServedModel("r", 2);
    for (int i = 0; i < 2; i++) {
      model.install(i, 7, primary(i, null, 2, 1f).snapshot());
    }
    PlacementSwitch placements = new PlacementSwitch(model, source, followed::set);
    SlotMap one = SlotMap.initial(List.of(), 2).resized(3);
    committed.set(one);
    placements.refresh();
    SlotMap two = one.resized(2);
    committed.set(two);
    // the copy of shard 0 was cut at epoch 2: it may lack what epoch 1 gives it
    assertThat(placements.stage(0, copy(primary(0, two, 2, 3f)), 2, 1)).isFalse();
    assertThat(placements.targetEpoch()).isEqualTo(2);
    assertThat(placements.stage(0, copy(primary(0, two, 2, 3f)), 2, 2)).isTrue();
    assertThat(placements.stage(1, copy(primary(1, two, 2, 3f)), 2, 2)).isTrue();
    assertThat(model.placementEpoch()).isEqualTo(2);
    assertThat(model.shardCount()).isEqualTo(2);
    for (long id = 0; id < 50; id++) {
      assertThat(lookup(model, id)).containsExactly(3f, 3f);
    }
  }

  @Test
  void gainers_ofTheNextEpoch_areTheShardsThatTookSlots_else_every_shard() {
    SlotMap one = SlotMap.initial(List.of(), 2).resized(3);
    List<SlotMove> moves = one.movesTo(one.resized(2), 100_000);
    SlotMove first = moves.get(0).toBuilder().setEpoch(2).build();
    SlotMap two = one.with(first);
    assertThat(PlacementSwitch.gainers(one, two)).containsExactly(first.getTo());
    assertThat(PlacementSwitch.gainers(null, one)).containsExactlyInAnyOrder(0, 1, 2);
    SlotMap three = two.with(moves.get(1).toBuilder().setEpoch(3).build());
    assertThat(PlacementSwitch.gainers(one, three)).containsExactlyInAnyOrder(0, 1);
  }

  @Test
  void settled_onlyOnceTheRecordsEpochIsServed() {
    ServedModel model = new ServedModel("r", 1);
    model.install(0, 7, primary(0, null, 1, 1f).snapshot());
    PlacementSwitch placements = new PlacementSwitch(model, source, followed::set);
    assertThat(placements.settled(0, 0)).isTrue();
    assertThat(placements.settled(0, 1)).isFalse();
  }
}
