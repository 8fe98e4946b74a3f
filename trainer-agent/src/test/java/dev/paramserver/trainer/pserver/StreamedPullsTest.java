package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.testing.FakePserver;
import dev.paramserver.trainer.testing.PserverCluster;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Row pulls on the pservers' push streams ({@link StreamedPushes#pull}), against fake pservers over
 * in-process gRPC (real etcd): a pull goes on a stream once an answer there said the pserver serves
 * pulls, else by {@code PullParameters}; a pull the stream declines or does not answer is made by
 * {@code PullParameters}, and the pushes go on. Rows start at {@link FakePserver#lazyRowValue} and
 * the gradients are 1, so every value pulled is exact.
 */
@Timeout(60)
class StreamedPullsTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static final ModelSpec SPARSE =
      new ModelSpec("sparse-lr", 50, 2, List.of(), Mlp.Activation.RELU, 4);

  private EtcdCoordinator coordinator;
  private PserverCluster cluster;
  private Parameters values;
  private String emb;
  // 10 rows of each pserver
  private long[] ids;

  @BeforeEach
  void start() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    cluster = new PserverCluster(coordinator, SPARSE, 2, 8, false);
    values = Initializers.initial(cluster.model, 7);
    cluster.initializer.ensureAll(values);
    ModelLayout layout = cluster.planner.layout();
    emb = layout.sparseTables().get(layout.sparseTables().size() - 1).name();
    SlotMap slots = SlotMap.initial(layout.blocks(), 2);
    int[] owned = new int[2];
    ids =
        LongStream.iterate(1_000_001, id -> id + 1)
            .filter(id -> owned[slots.ownerOfRow(ShardPlacement.tableHash(emb), id)]++ < 10)
            .limit(20)
            .toArray();
    for (FakePserver ps : cluster.pservers) {
      ps.servePullsOnStreams(true);
    }
  }

  @AfterEach
  void stop() throws Exception {
    cluster.client.streams().close(Duration.ofSeconds(2));
    cluster.close();
    coordinator.close();
  }

  /** Pushes a gradient of 1 for every row of {@link #ids} and waits for its answers. */
  private void pushOnes() {
    Parameters grads = Parameters.zerosLike(cluster.model);
    Parameters.SparseTable table = grads.sparse(emb);
    for (long row : ids) {
      float[] g = new float[table.width()];
      Arrays.fill(g, 1f);
      table.put(row, g);
    }
    Parameters into = Parameters.zerosLike(cluster.model);
    cluster.client.streams().await(cluster.client.startPush(grads, values, into));
  }

  /** Pulls {@link #ids}, each row's values by id. */
  private Map<Long, float[]> pull() {
    List<SparseRows> answered = cluster.client.startRowPull(Map.of(emb, ids.clone())).await(values);
    Map<Long, float[]> rows = new HashMap<>();
    for (SparseRows r : answered) {
      float[] data = TensorCodec.decode(r.getData(), r.getDtype());
      int width = data.length / r.getRowIdsCount();
      for (int i = 0; i < r.getRowIdsCount(); i++) {
        rows.put(r.getRowIds(i), Arrays.copyOfRange(data, i * width, (i + 1) * width));
      }
    }
    return rows;
  }

  private int unaryPulls() {
    return cluster.pservers.stream().mapToInt(FakePserver::pulls).sum();
  }

  private int streamedPulls() {
    return cluster.pservers.stream().mapToInt(FakePserver::streamedPulls).sum();
  }

  private void assertPushedOnce(Map<Long, float[]> rows, String what) {
    assertThat(rows).as(what).hasSize(ids.length);
    for (long id : ids) {
      assertThat(rows.get(id))
          .as("row %d %s", id, what)
          .containsOnly(FakePserver.lazyRowValue(id) - PserverCluster.LEARNING_RATE);
    }
  }

  @Test
  void pulls_rideOnThePushStreams_onceAnAnswerThereSaysThePserverServesThem() {
    for (FakePserver ps : cluster.pservers) {
      assertThat(ps.initialised()).isTrue();
    }
    int before = unaryPulls();
    Map<Long, float[]> first = pull();
    assertThat(first).hasSize(ids.length);
    assertThat(unaryPulls() - before).as("no stream yet: by PullParameters").isEqualTo(2);
    assertThat(streamedPulls()).isZero();

    pushOnes();
    assertPushedOnce(pull(), "pulled on the streams");
    assertThat(unaryPulls() - before).as("no PullParameters call more").isEqualTo(2);
    assertThat(streamedPulls()).as("one pull on each pserver's stream").isEqualTo(2);
    for (FakePserver ps : cluster.pservers) {
      assertThat(ps.streamCalls()).as("the pushes' stream carried the pull").isOne();
    }
  }

  @Test
  void aPullTheStreamDeclines_isMadeByPullParameters_andThePushesGoOn() {
    pushOnes();
    int before = unaryPulls();
    cluster.get(0).declineStreamPulls(1);
    assertPushedOnce(pull(), "pulled after a decline");
    assertThat(unaryPulls() - before).as("the declined one, by PullParameters").isEqualTo(1);
    assertThat(streamedPulls()).isEqualTo(2);

    pushOnes();
    for (long id : ids) {
      assertThat(pull().get(id))
          .containsOnly(FakePserver.lazyRowValue(id) - 2 * PserverCluster.LEARNING_RATE);
    }
    assertThat(cluster.get(0).streamCalls()).as("the stream went on").isOne();
  }

  @Test
  void aPullWhoseStreamFails_isMadeByPullParameters_andThePushesAreWrittenAgain() {
    pushOnes();
    int before = unaryPulls();
    cluster.get(1).failStreamOnPulls(1);
    assertPushedOnce(pull(), "pulled after the stream failed");
    assertThat(unaryPulls() - before).as("the lost one, by PullParameters").isEqualTo(1);

    pushOnes();
    assertThat(cluster.get(1).streamCalls()).as("a new stream for the pushes").isEqualTo(2);
    for (long id : ids) {
      assertThat(pull().get(id))
          .containsOnly(FakePserver.lazyRowValue(id) - 2 * PserverCluster.LEARNING_RATE);
    }
  }

  @Test
  void aPserverOlderThanPullsOnStreams_isPulledFromByPullParameters() {
    // a pserver that does not serve pulls on streams says nothing of them in its push answers
    cluster.get(0).servePullsOnStreams(false);
    pushOnes();
    int before = unaryPulls();
    assertPushedOnce(pull(), "pulled from an older pserver");
    assertThat(unaryPulls() - before).isEqualTo(1);
    assertThat(cluster.get(0).streamedPulls()).isZero();
    assertThat(cluster.get(1).streamedPulls()).isOne();
  }
}
