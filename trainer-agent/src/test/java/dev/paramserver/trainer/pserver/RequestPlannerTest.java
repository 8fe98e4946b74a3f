package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.trainer.pserver.RequestPlanner.Planned;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class RequestPlannerTest {
  private static final OptimizerConfig SGD =
      OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(0.1f).build();

  /**
   * A softmax of 300k features x 4 classes: 1.2M weights, cut in blocks of 100k over 3 pservers.
   */
  private final Model big =
      ModelFactory.create(new ModelSpec("softmax", 300_000, 4, List.of(), Mlp.Activation.RELU, 0));

  private final Model sparse =
      ModelFactory.create(new ModelSpec("sparse-lr", 3, 2, List.of(), Mlp.Activation.RELU, 4));

  private static int totalBlocks(RequestPlanner p) {
    int n = 0;
    for (int ps = 0; ps < p.layout().pservers(); ps++) {
      n += p.layout().blocksOf(ps).size();
    }
    return n;
  }

  private RequestPlanner planner(Model model, DataType type, boolean sync) {
    return new RequestPlanner(new ModelLayout(model, 100_000, SGD, 3), "t1", type, sync);
  }

  @Test
  void emptyPushes_goToEveryPserver_asOneIdentifiedStepWithoutGradients() {
    RequestPlanner p =
        new RequestPlanner(
            new ModelLayout(sparse, 100_000, SGD, 3),
            "t1",
            DataType.FLOAT32,
            dev.paramserver.proto.v1.TrainingMode.BOUNDED_STALENESS,
            2);
    List<Planned<PushGradientsRequest>> pushes = p.emptyPushes(5);
    assertThat(pushes).extracting(Planned::pserver).containsExactly(0, 1, 2);
    for (Planned<PushGradientsRequest> push : pushes) {
      assertThat(push.request().getStep()).isEqualTo(5);
      assertThat(push.request().getPart()).isZero();
      assertThat(push.request().getSession()).isNotEmpty();
      assertThat(push.request().getGradientsCount()).isZero();
      assertThat(push.request().getSparseGradientsCount()).isZero();
    }
  }

  @Test
  void groups_keepEveryRequestUnderTheCap() {
    List<BlockSpec> blocks = new ModelLayout(big, 100_000, SGD, 1).blocksOf(0);
    List<List<BlockSpec>> groups = RequestPlanner.groups(blocks);
    assertThat(groups).hasSizeGreaterThan(1);
    assertThat(groups.stream().mapToInt(List::size).sum()).isEqualTo(blocks.size());
    for (List<BlockSpec> g : groups) {
      assertThat(g.stream().mapToLong(BlockSpec::bytes).sum())
          .isLessThanOrEqualTo(RequestPlanner.MAX_REQUEST_BYTES);
    }
  }

  @Test
  void asyncPushes_coverEveryBlockOnce_onItsOwner_inTheWireType() {
    RequestPlanner p = planner(big, DataType.FLOAT16, false);
    Parameters grads = Parameters.zerosLike(big);
    List<Planned<PushGradientsRequest>> pushes = p.pushes(grads, 7);
    long blocks = 0;
    for (Planned<PushGradientsRequest> push : pushes) {
      assertThat(push.request().getStep()).isEqualTo(7);
      assertThat(push.request().getTrainerId()).isEqualTo("t1");
      for (var b : push.request().getGradientsList()) {
        assertThat(b.getDtype()).isEqualTo(DataType.FLOAT16);
        assertThat(p.layout().blocksOf(push.pserver()))
            .anyMatch(s -> s.name().equals(b.getName()) && s.block() == b.getBlock());
        blocks++;
      }
    }
    assertThat(blocks).isEqualTo(totalBlocks(p));
  }

  @Test
  void pushes_carryOneSession_andDistinctPartsPerPserver() {
    // 4.8 MB of weights on one pserver: several requests to it
    RequestPlanner p =
        new RequestPlanner(new ModelLayout(big, 100_000, SGD, 1), "t1", DataType.FLOAT32, false);
    List<Planned<PushGradientsRequest>> pushes = p.pushes(Parameters.zerosLike(big), 3);
    assertThat(pushes).hasSizeGreaterThan(1);
    assertThat(pushes)
        .extracting(x -> x.request().getSession())
        .containsOnly(pushes.get(0).request().getSession());
    assertThat(pushes.get(0).request().getSession()).isNotEmpty();
    for (int ps = 0; ps < p.layout().pservers(); ps++) {
      int owner = ps;
      List<Integer> parts =
          pushes.stream()
              .filter(x -> x.pserver() == owner)
              .map(x -> x.request().getPart())
              .toList();
      assertThat(parts).doesNotHaveDuplicates();
    }
    assertThat(
            planner(big, DataType.FLOAT32, false)
                .pushes(Parameters.zerosLike(big), 3)
                .get(0)
                .request()
                .getSession())
        .as("another run of the trainer")
        .isNotEqualTo(pushes.get(0).request().getSession());
  }

  @Test
  void syncPushes_areOnePerPserver_evenWhenEmpty() {
    RequestPlanner p = planner(sparse, DataType.FLOAT32, true);
    List<Planned<PushGradientsRequest>> pushes = p.pushes(Parameters.zerosLike(sparse), 0);
    assertThat(pushes).extracting(Planned::pserver).containsExactly(0, 1, 2);
    assertThat(p.mode()).isEqualTo(TrainingMode.SYNC);
  }

  @Test
  void sparseRows_goToTheirOwners_withTheirValues() {
    RequestPlanner p = planner(sparse, DataType.FLOAT32, false);
    Parameters grads = Parameters.zerosLike(sparse);
    // the embedding (width 4): every value of a row checked
    String table = p.layout().sparseTables().get(p.layout().sparseTables().size() - 1).name();
    int width = grads.sparse(table).width();
    assertThat(width).isEqualTo(4);
    for (long id = 0; id < 20; id++) {
      float[] row = grads.sparse(table).row(id);
      row[0] = id;
      if (width > 1) {
        row[width - 1] = -0.5f - id;
      }
    }
    int rows = 0;
    for (Planned<PushGradientsRequest> push : p.pushes(grads, 1)) {
      for (var sr : push.request().getSparseGradientsList()) {
        float[] data = TensorCodec.decode(sr.getData(), sr.getDtype());
        for (int i = 0; i < sr.getRowIdsCount(); i++) {
          long id = sr.getRowIds(i);
          assertThat(p.layout().ownerOfRow(table, id)).isEqualTo(push.pserver());
          assertThat(data[i * width]).isEqualTo((float) id);
          if (width > 1) {
            assertThat(data[i * width + width - 1]).isEqualTo(-0.5f - id);
          }
          rows++;
        }
      }
    }
    assertThat(rows).isEqualTo(20);
  }

  @Test
  void pullsAndRowPulls_askEachOwnerForItsShare() {
    RequestPlanner p = planner(big, DataType.FLOAT32, false);
    int refs = 0;
    for (Planned<PullParametersRequest> pull : p.pulls()) {
      refs += pull.request().getBlocksCount();
    }
    assertThat(refs).isEqualTo(totalBlocks(p));

    RequestPlanner s = planner(sparse, DataType.FLOAT32, false);
    List<Planned<PullParametersRequest>> rowPulls = s.rowPulls(new long[] {1, 2, 3, 2, 1});
    String table = s.layout().sparseTables().get(0).name();
    for (Planned<PullParametersRequest> pull : rowPulls) {
      for (long id : pull.request().getSparseRows(0).getRowIdsList()) {
        assertThat(s.layout().ownerOfRow(table, id)).isEqualTo(pull.pserver());
      }
    }
    assertThat(rowPulls.stream().mapToInt(r -> r.request().getSparseRows(0).getRowIdsCount()).sum())
        .isEqualTo(3);
  }

  @Test
  void rowPullsByTable_askEachOwnerForItsDistinctIds_inTheOrderGiven() {
    RequestPlanner s = planner(sparse, DataType.FLOAT32, false);
    String table = s.layout().sparseTables().get(0).name();
    long[] wanted = LongStream.range(0, 40).map(i -> 1000 - 7 * i).toArray();
    List<Planned<PullParametersRequest>> pulls = s.rowPulls(java.util.Map.of(table, wanted));
    assertThat(pulls.size()).isGreaterThan(1);
    List<Long> all = new java.util.ArrayList<>();
    for (Planned<PullParametersRequest> pull : pulls) {
      List<Long> ids = pull.request().getSparseRows(0).getRowIdsList();
      for (long id : ids) {
        assertThat(s.layout().ownerOfRow(table, id)).isEqualTo(pull.pserver());
      }
      assertThat(ids)
          .as("descending, as given")
          .isSortedAccordingTo(java.util.Comparator.reverseOrder());
      all.addAll(ids);
    }
    assertThat(all).containsExactlyInAnyOrder(LongStream.of(wanted).boxed().toArray(Long[]::new));
  }

  @Test
  void rowPullsWithHeldRows_keepEachOwnersHeldOnesFirst_countedThere_underTheWriterTag() {
    RequestPlanner s = planner(sparse, DataType.FLOAT32, false);
    String table = s.layout().sparseTables().get(0).name();
    long[] wanted = LongStream.range(0, 40).map(i -> 1000 - 7 * i).toArray();
    RowWants wants = new RowWants(77);
    wants.put(table, wanted, 25);
    List<Planned<PullParametersRequest>> pulls = s.rowPulls(wants);
    assertThat(pulls.size()).isGreaterThan(1);
    int held = 0;
    for (Planned<PullParametersRequest> pull : pulls) {
      assertThat(pull.request().getWriterTag()).isEqualTo(77);
      SparseRowsRef ref = pull.request().getSparseRows(0);
      for (int i = 0; i < ref.getRowIdsCount(); i++) {
        assertThat(ref.getRowIds(i) > 1000 - 7 * 25)
            .as("row %d of pserver %d held", ref.getRowIds(i), pull.pserver())
            .isEqualTo(i < ref.getHeld());
      }
      held += ref.getHeld();
    }
    assertThat(held).isEqualTo(25);
  }

  @Test
  void inits_carryTheSpecsAndFloat32Values_ofThePserversBlocks() {
    RequestPlanner p = planner(big, DataType.BFLOAT16, false);
    Parameters values = Parameters.zerosLike(big);
    List<InitParametersRequest> inits = p.inits(1, values, "init-1");
    assertThat(inits).allSatisfy(r -> assertThat(r.getInitId()).isEqualTo("init-1"));
    assertThat(inits)
        .allSatisfy(r -> assertThat(r.getParametersList()).isEqualTo(p.layout().specs()));
    assertThat(inits.stream().mapToInt(InitParametersRequest::getBlocksCount).sum())
        .isEqualTo(p.layout().blocksOf(1).size());
    assertThat(inits.get(0).getBlocks(0).getDtype()).isEqualTo(DataType.FLOAT32);
  }
}
