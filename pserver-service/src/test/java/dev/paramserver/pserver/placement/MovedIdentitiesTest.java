package dev.paramserver.pserver.placement;

import static dev.paramserver.pserver.placement.ElasticCluster.TABLE;
import static dev.paramserver.pserver.placement.ElasticCluster.WIDTH;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.PushPart;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Applied-push identities travel with the slots (docs/explanation/elastic.md, "Trainers"): a push a
 * pserver applied but whose answer was lost, the pserver then shrunk away and gone, is resent by
 * the trainer in pieces cut by the committed map, each naming the push it was cut from ({@code
 * resent_from}); the new owners answer them as duplicates, so it is applied once. One push is known
 * to its new owner from the move's copy (applied before the cut), the other from a forwarded record
 * (applied while the move's copy was on its way). Real pservers and etcd.
 */
class MovedIdentitiesTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final long HELD = 7;

  @Test
  @Timeout(120)
  void aPushWhoseAnswerWasLost_resentInPiecesAfterItsServerIsGone_isAppliedOnce() throws Exception {
    FencedMoveAttemptsTest.Hold hold = new FencedMoveAttemptsTest.Hold(HELD);
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.start(0, 2);
      c.start(1, 2);
      c.initialise(2);
      c.setDesired(3);
      c.start(2, 3, new ChannelFactory(null, List.of(hold)));
      SlotMap start = c.committed(2);
      SlotMap grown = start;
      for (SlotMove m : start.movesTo(start.resized(3), 1 << 14)) {
        grown = c.commit(grown, m);
      }
      // the shrink back: one move from pserver 2 to each of 0 and 1
      List<SlotMove> shrink = grown.movesTo(grown.resized(2), 1 << 14);
      assertThat(shrink).extracting(SlotMove::getTo).containsExactlyInAnyOrder(0, 1);
      SlotMap shrunk = grown.resized(2);
      long hash = ShardPlacement.tableHash(TABLE);
      List<Long> rows = new ArrayList<>();
      Map<Integer, Integer> per = new TreeMap<>();
      for (long id = 0; rows.size() < 16; id++) {
        int to = shrunk.ownerOfRow(hash, id);
        if (grown.ownerOfRow(hash, id) == 2 && per.getOrDefault(to, 0) < 8) {
          rows.add(id);
          per.merge(to, 1, Integer::sum);
        }
      }

      // trainer a's push is applied by pserver 2 before the shrink; its answer is lost
      PushGradientsRequest a = push("a", rows, 1f);
      c.ps(2).pushGradients(a);
      SlotMove first =
          shrink.get(0).toBuilder()
              .setEpoch(grown.epoch() + 1)
              .setId("shrink-0")
              .setAttempt(HELD)
              .build();
      assertThat(c.store.begin(c.store.read(), first)).isTrue();
      SlotMove held = first;
      CompletableFuture<MoveOutResponse> out =
          CompletableFuture.supplyAsync(() -> c.moves(2).moveOut(held));
      assertThat(hold.reached.await(30, TimeUnit.SECONDS)).isTrue();
      // trainer b's push is applied after the first move's cut: it reaches the new owner as a
      // forwarded record; its answer is lost too
      PushGradientsRequest b = push("b", rows, 2f);
      c.ps(2).pushGradients(b);
      hold.released = true;
      out.get(60, TimeUnit.SECONDS);
      SlotMap now = grown.with(first);
      assertThat(c.store.commit(c.store.read(), now.toProto())).isTrue();
      SlotMap last = c.commit(now, shrink.get(1));
      // pserver 2 owns nothing: it is shut down, as the coordinator does after a shrink
      c.stop(2);

      // each trainer resends its push by the committed map, in pieces naming it
      for (PushGradientsRequest lost : List.of(a, b)) {
        int part = 1 << 15;
        for (Map.Entry<Integer, List<Long>> piece : byOwner(last, rows).entrySet()) {
          PushGradientsRequest resent =
              push(lost.getTrainerId(), piece.getValue(), grad(lost)).toBuilder()
                  .setOrigin(3)
                  .setPart(part++)
                  .addResentFrom(PushPart.newBuilder().setOrigin(3).setPart(lost.getPart()))
                  .build();
          PushGradientsResponse answer = c.ps(piece.getKey()).pushGradients(resent);
          assertThat(answer.getDuplicate())
              .as(
                  "trainer "
                      + lost.getTrainerId()
                      + "'s piece to pserver "
                      + piece.getKey()
                      + ", a push pserver 2 applied")
              .isTrue();
        }
      }
      // applied once: every row is its initial value (0) minus 1 minus 2
      for (Map.Entry<Integer, List<Long>> e : byOwner(last, rows).entrySet()) {
        float[] got = c.pullRows(e.getKey(), e.getValue());
        float[] expected = new float[got.length];
        Arrays.fill(expected, -3f);
        assertThat(got).as("rows on pserver " + e.getKey()).containsExactly(expected);
      }
    }
  }

  private static float grad(PushGradientsRequest p) {
    return TensorCodec.decode(p.getSparseGradients(0).getData())[0];
  }

  private static Map<Integer, List<Long>> byOwner(SlotMap map, List<Long> rows) {
    long hash = ShardPlacement.tableHash(TABLE);
    Map<Integer, List<Long>> out = new LinkedHashMap<>();
    for (long id : rows) {
      out.computeIfAbsent(map.ownerOfRow(hash, id), k -> new ArrayList<>()).add(id);
    }
    return out;
  }

  /** An identified push (step 1, part 0, first sent to pserver 2) of {@code g} to each row. */
  private static PushGradientsRequest push(String trainer, List<Long> rows, float g) {
    float[] data = new float[rows.size() * WIDTH];
    Arrays.fill(data, g);
    return PushGradientsRequest.newBuilder()
        .setTrainerId(trainer)
        .setSession("s")
        .setStep(1)
        .setPart(0)
        .addSparseGradients(
            SparseRows.newBuilder()
                .setName(TABLE)
                .setDtype(DataType.FLOAT32)
                .addAllRowIds(rows)
                .setData(TensorCodec.encode(data)))
        .build();
  }
}
