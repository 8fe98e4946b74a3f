package dev.paramserver.pserver.placement;

import static dev.paramserver.pserver.placement.ElasticCluster.BLOCK;
import static dev.paramserver.pserver.placement.ElasticCluster.BLOCKS;
import static dev.paramserver.pserver.placement.ElasticCluster.DENSE;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.pserver.shard.Requests;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The old owner of a shrink's moves restarts in the middle of the shrink (docs/explanation/
 * elastic.md#shrinking): {@code ps_desired} is already 2 while the committed map still gives index
 * 2 slots and blocks. The restarted pserver, configured with index 2, must claim index 2 again (not
 * the lowest free index, whose checkpoint is another pserver's), load its own state, and let the
 * shrink's moves run and commit.
 */
class RestartedOldOwnerTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  @Test
  @Timeout(180)
  void oldOwnerRestartedMidShrink_claimsItsOwnIndexBack_andTheShrinkCommits() {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      SlotMap grown = c.committed(2);
      for (SlotMove m : grown.movesTo(grown.resized(3), 1 << 14)) {
        grown = c.commit(grown, m);
      }
      List<Integer> blocksOf2 = new ArrayList<>();
      for (int b = 0; b < BLOCKS; b++) {
        if (grown.ownerOfBlock(DENSE, b) == 2) {
          blocksOf2.add(b);
        }
      }
      assertThat(blocksOf2).as("dense blocks the grow gave pserver 2").isNotEmpty();
      // a gradient only pserver 2's own state (its log) holds: each value of its blocks goes down 1
      Map<Integer, float[]> expected = new HashMap<>();
      PushGradientsRequest.Builder push =
          PushGradientsRequest.newBuilder().setTrainerId("t").setSession("s").setStep(1);
      for (int b : blocksOf2) {
        float[] ones = new float[BLOCK];
        Arrays.fill(ones, 1f);
        push.addGradients(Requests.gradient(DENSE, b, ones));
        float[] v = ElasticCluster.initialBlock(b);
        for (int i = 0; i < v.length; i++) {
          v[i] -= 1f;
        }
        expected.put(b, v);
      }
      assertThat(c.ps(2).pushGradients(push.build()).getDuplicate()).isFalse();

      // the shrink begins: ps_desired is lowered first, then the first move out of index 2 begins,
      // and its old owner goes down before its MoveOut (then comes back with the same index)
      c.setDesired(2);
      List<SlotMove> shrink = grown.movesTo(grown.resized(2), 1 << 14);
      SlotMove first = c.begin(grown, shrink.get(0));
      c.stop(2);
      c.start(
          2, 2); // waits until pserver 2 claimed index 2 (before the fix: index 0 or 1, or none)

      for (int b : blocksOf2) {
        assertThat(c.pullBlock(2, b))
            .as("block %d reloaded by pserver 2", b)
            .isEqualTo(expected.get(b));
      }
      assertThat(c.epochServed(2)).isEqualTo(grown.epoch());
      // the move begun before the restart is rolled back by the new claim (nothing of an earlier
      // process carries over); the coordinator begins it again
      assertThat(c.store.read().move()).as("move %s after the restart", first.getId()).isEmpty();
      SlotMove again = first.toBuilder().setAttempt(first.getAttempt() + 1).build();
      assertThat(c.store.begin(c.store.read(), again)).isTrue();
      SlotMap shrunk = c.runAndCommit(grown, again);
      for (SlotMove m : shrunk.movesTo(shrunk.resized(2), 1 << 14)) {
        shrunk = c.commit(shrunk, m);
      }
      assertThat(shrunk.pservers()).isEqualTo(2);
      assertThat(c.store.read().places(2)).as("index 2 owns nothing after the shrink").isFalse();
      for (int b : blocksOf2) {
        int owner = shrunk.ownerOfBlock(DENSE, b);
        assertThat(owner).isIn(0, 1);
        assertThat(c.pullBlock(owner, b))
            .as("block %d on pserver %d", b, owner)
            .isEqualTo(expected.get(b));
      }
    }
  }
}
