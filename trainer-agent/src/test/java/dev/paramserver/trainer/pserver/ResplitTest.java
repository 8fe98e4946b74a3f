package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.PushPart;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.trainer.pserver.RequestPlanner.Planned;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Re-splitting a request refused with MOVED: every block and row goes to its owner under the new
 * map, once, with its encoded values, and each piece keeps the refused push's identity and names
 * its origin.
 */
class ResplitTest {
  private final ResentParts resent = new ResentParts();

  private static final OptimizerConfig SGD =
      OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(0.1f).build();

  // dense: bias, 50 weights (7 blocks of 8), the embedding's output; sparse: wide and emb (4 wide)
  private final Model model =
      ModelFactory.create(new ModelSpec("sparse-lr", 50, 2, List.of(), Mlp.Activation.RELU, 4));
  private final ModelLayout layout = new ModelLayout(model, 8, SGD, 2);
  private final RequestPlanner planner =
      new RequestPlanner(layout, "t1", "session-1", DataType.FLOAT16, TrainingMode.ASYNC, 0);
  // the job grown to 3 pservers: index 2 takes a third of the slots and some blocks
  private final Routing grown =
      new Routing(SlotMap.initial(layout.blocks(), 2).resized(3), layout.blocks());

  private Parameters gradients() {
    Parameters grads = Parameters.zerosLike(model);
    for (String name : grads.denseNames()) {
      float[] d = grads.dense(name);
      for (int i = 0; i < d.length; i++) {
        d[i] = i + 0.5f;
      }
    }
    for (String name : grads.sparseNames()) {
      Parameters.SparseTable t = grads.sparse(name);
      for (long id = 0; id < 200; id++) {
        float[] row = new float[t.width()];
        for (int k = 0; k < row.length; k++) {
          row[k] = id + k / 8f;
        }
        t.put(id * 7919, row);
      }
    }
    return grads;
  }

  /** "table#row" -> the row's encoded bytes, of every row of {@code rows}. */
  private static Map<String, List<Byte>> rowBytes(List<SparseRows> rows) {
    Map<String, List<Byte>> out = new HashMap<>();
    for (SparseRows r : rows) {
      int per = r.getData().size() / r.getRowIdsCount();
      byte[] all = r.getData().toByteArray();
      for (int i = 0; i < r.getRowIdsCount(); i++) {
        List<Byte> b = new ArrayList<>();
        for (int k = 0; k < per; k++) {
          b.add(all[i * per + k]);
        }
        assertThat(out.put(r.getName() + "#" + r.getRowIds(i), b)).isNull();
      }
    }
    return out;
  }

  @Test
  void refusedParts_goToTheirNewOwners_withTheirIdentityAndOrigin() {
    List<Planned<PushGradientsRequest>> parts = planner.pushes(gradients(), 9, true, true);
    int severalOwners = 0;
    Set<Integer> owners = new HashSet<>();
    for (Planned<PushGradientsRequest> planned : parts) {
      PushGradientsRequest refused =
          planned.request().toBuilder().setAcknowledgedThrough(8).build();
      List<Planned<PushGradientsRequest>> pieces =
          Resplit.push(new Planned<>(planned.pserver(), refused), grown, resent::next);
      Set<Integer> partsGiven = new HashSet<>();

      List<TensorBlock> blocks = new ArrayList<>();
      List<SparseRows> rows = new ArrayList<>();
      for (Planned<PushGradientsRequest> piece : pieces) {
        PushGradientsRequest r = piece.request();
        owners.add(piece.pserver());
        assertThat(r.getTrainerId()).isEqualTo("t1");
        assertThat(r.getSession()).isEqualTo("session-1");
        assertThat(r.getStep()).isEqualTo(9);
        assertThat(r.getPart()).as("a part of its own").isGreaterThanOrEqualTo(ResentParts.FIRST);
        assertThat(partsGiven.add(r.getPart())).as("parts distinct within the step").isTrue();
        assertThat(r.getReturnValues()).isEqualTo(refused.getReturnValues());
        assertThat(r.getReturnRows()).isEqualTo(refused.getReturnRows());
        assertThat(r.getAcknowledgedThrough()).as("the origin's watermark").isEqualTo(8);
        assertThat(r.getOrigin())
            .as("first sent to %d", planned.pserver())
            .isEqualTo(planned.pserver() + 1);
        for (TensorBlock g : r.getGradientsList()) {
          assertThat(grown.ownerOfBlock(g.getName(), g.getBlock())).isEqualTo(piece.pserver());
        }
        for (SparseRows s : r.getSparseGradientsList()) {
          assertThat(s.getDtype()).isEqualTo(DataType.FLOAT16);
          for (long id : s.getRowIdsList()) {
            assertThat(grown.ownerOfRow(s.getName(), id))
                .as("row %s#%d", s.getName(), id)
                .isEqualTo(piece.pserver());
          }
        }
        blocks.addAll(r.getGradientsList());
        rows.addAll(r.getSparseGradientsList());
      }
      assertThat(pieces).extracting(Planned::pserver).doesNotHaveDuplicates();
      if (pieces.size() > 1) {
        severalOwners++;
      }
      // every block and row once, with the very bytes the refused part carried
      assertThat(blocks).containsExactlyInAnyOrderElementsOf(refused.getGradientsList());
      assertThat(rowBytes(rows)).isEqualTo(rowBytes(refused.getSparseGradientsList()));
    }
    assertThat(severalOwners).as("parts whose content now has several owners").isPositive();
    assertThat(owners).contains(2);
  }

  @Test
  void aPieceRefusedAgain_keepsItsFirstOrigin() {
    Planned<PushGradientsRequest> rows =
        planner.pushes(gradients(), 3).stream()
            .filter(p -> p.request().getSparseGradientsCount() > 0 && p.pserver() == 1)
            .findFirst()
            .orElseThrow();
    List<Planned<PushGradientsRequest>> pieces = Resplit.push(rows, grown, resent::next);
    Planned<PushGradientsRequest> toNew =
        pieces.stream().filter(p -> p.pserver() == 2).findFirst().orElseThrow();
    // refused again by 2 (say it moved on): split by a map of 4 pservers
    Routing four = new Routing(grown.map().resized(4), layout.blocks());
    Set<Integer> given = new HashSet<>();
    pieces.forEach(p -> given.add(p.request().getPart()));
    // each piece names the request it was cut from (origin as index + 1, its part)
    for (Planned<PushGradientsRequest> p : pieces) {
      assertThat(p.request().getResentFromList())
          .containsExactly(
              PushPart.newBuilder().setOrigin(2).setPart(rows.request().getPart()).build());
    }
    for (Planned<PushGradientsRequest> again : Resplit.push(toNew, four, resent::next)) {
      assertThat(again.request().getOrigin()).isEqualTo(2);
      // and a piece of a piece names both: a server that knows either as applied has it
      assertThat(again.request().getResentFromList())
          .containsExactly(
              PushPart.newBuilder().setOrigin(2).setPart(rows.request().getPart()).build(),
              PushPart.newBuilder().setOrigin(2).setPart(toNew.request().getPart()).build());
      // a piece of a piece may reach a server a piece of the same step reached: never the same part
      assertThat(given.add(again.request().getPart())).isTrue();
    }
  }

  @Test
  void refusedPulls_ofBlocksAndRows_goToTheirNewOwners() {
    long[] ids = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987};
    List<Planned<PullParametersRequest>> pulls = new ArrayList<>(planner.pulls());
    pulls.addAll(planner.rowPulls(ids));
    for (Planned<PullParametersRequest> refused : pulls) {
      Set<String> asked = new HashSet<>();
      refused.request().getBlocksList().forEach(b -> asked.add(b.getName() + "#" + b.getBlock()));
      for (SparseRowsRef ref : refused.request().getSparseRowsList()) {
        ref.getRowIdsList().forEach(id -> asked.add(ref.getName() + "/" + id));
      }
      Set<String> sent = new HashSet<>();
      for (Planned<PullParametersRequest> piece : Resplit.pull(refused, grown)) {
        assertThat(piece.request().getTrainerId()).isEqualTo("t1");
        for (BlockRef b : piece.request().getBlocksList()) {
          assertThat(grown.ownerOfBlock(b.getName(), b.getBlock())).isEqualTo(piece.pserver());
          assertThat(sent.add(b.getName() + "#" + b.getBlock())).isTrue();
        }
        for (SparseRowsRef ref : piece.request().getSparseRowsList()) {
          for (long id : ref.getRowIdsList()) {
            assertThat(grown.ownerOfRow(ref.getName(), id)).isEqualTo(piece.pserver());
            assertThat(sent.add(ref.getName() + "/" + id)).isTrue();
          }
        }
      }
      assertThat(sent).isEqualTo(asked);
    }
  }

  @Test
  void piecesAnswers_makeTheRefusedOnesAnswer() {
    TensorBlock a =
        TensorBlock.newBuilder().setName("a").setData(TensorCodec.encode(new float[] {1})).build();
    TensorBlock b =
        TensorBlock.newBuilder().setName("b").setData(TensorCodec.encode(new float[] {2})).build();
    PushGradientsResponse one =
        PushGradientsResponse.newBuilder().setStep(4).addBlocks(a).setDuplicate(true).build();
    PushGradientsResponse two = PushGradientsResponse.newBuilder().setStep(4).addBlocks(b).build();
    PushGradientsResponse merged = Resplit.mergePush(List.of(one, two));
    assertThat(merged.getBlocksList()).containsExactly(a, b);
    assertThat(merged.getStep()).isEqualTo(4);
    assertThat(merged.getDuplicate()).as("one piece was applied now").isFalse();
    assertThat(Resplit.mergePush(List.of(one, one)).getDuplicate()).isTrue();
  }

  @Test
  void aBlockTheNewMapLacks_isAnError() {
    Planned<PushGradientsRequest> refused =
        new Planned<>(
            0,
            PushGradientsRequest.newBuilder()
                .addGradients(TensorBlock.newBuilder().setName("nope").setBlock(3))
                .build());
    assertThatThrownBy(() -> Resplit.push(refused, grown, resent::next))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("nope#3");
  }
}
