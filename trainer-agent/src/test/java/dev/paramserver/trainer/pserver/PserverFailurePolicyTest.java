package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Parameters;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.testing.PserverCluster;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The trainer's failure policy towards pservers, over in-process gRPC against fake pservers (real
 * etcd for their registrations): re-initialisation of a pserver restarted empty, retries with
 * backoff of a pserver gone for a while, pushes retried with their identity until acknowledged, a
 * withdrawn synchronous step pushed again, a stop during retries.
 */
@Timeout(30)
class PserverFailurePolicyTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private PserverCluster cluster;
  private Parameters values;

  private void start(boolean sync) throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    // blocks of 2 elements: softmax 2x2 weights and 2 biases make 3 blocks over 2 pservers
    cluster = new PserverCluster(coordinator, 2, 2, sync);
    values = Initializers.initial(cluster.model, 7);
    cluster.initializer.ensureAll(values);
  }

  @BeforeEach
  void async() throws Exception {
    start(false);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
    coordinator.close();
  }

  private BlockSpec firstBlockOf(int ps) {
    return cluster.planner.layout().blocksOf(ps).get(0);
  }

  private Parameters filled(float v) {
    Parameters p = Parameters.zerosLike(cluster.model);
    for (String name : p.denseNames()) {
      Arrays.fill(p.dense(name), v);
    }
    return p;
  }

  @Test
  void ensureAll_initialisesEveryPserver_withTheTrainersValues() {
    BlockSpec b = firstBlockOf(1);
    assertThat(cluster.get(0).initialised()).isTrue();
    assertThat(cluster.get(1).initialised()).isTrue();
    assertThat(cluster.get(1).value(b.name(), b.block(), 0))
        .isEqualTo(values.dense(b.name())[(int) b.offset()]);
    assertThat(coordinator.kv().get(coordinator.keys().initDone())).isPresent();
  }

  @Test
  void pserverRestartedEmpty_isReinitialisedWithTheLatestValues_andThePullSucceeds() {
    cluster.get(1).wipe();
    Parameters latest = filled(3f);

    cluster.client.pull(latest);

    BlockSpec b = firstBlockOf(1);
    assertThat(cluster.get(1).initialised()).isTrue();
    assertThat(cluster.get(1).value(b.name(), b.block(), 0)).isEqualTo(3f);
    assertThat(latest.dense(b.name())[(int) b.offset()]).isEqualTo(3f);
    // the other pserver kept its own values
    BlockSpec a = firstBlockOf(0);
    assertThat(latest.dense(a.name())[(int) a.offset()])
        .isEqualTo(values.dense(a.name())[(int) a.offset()]);
  }

  @Test
  void pserverGoneForAWhile_pullRetriesWithBackoff_thenRecovers() {
    cluster.get(0).unavailableFor(4);
    int before = cluster.get(0).pulls();
    long start = System.nanoTime();

    cluster.client.pull(values);

    long elapsedMs = (System.nanoTime() - start) / 1_000_000;
    assertThat(cluster.get(0).pulls() - before).isEqualTo(5);
    // the first failure is the pull sent to every pserver at once; three waits of 50 ms (less up
    // to 20% jitter) separate the four retries
    assertThat(elapsedMs).isGreaterThanOrEqualTo(120);
    BlockSpec a = firstBlockOf(0);
    assertThat(values.dense(a.name())[(int) a.offset()])
        .isEqualTo(cluster.get(0).value(a.name(), a.block(), 0));
  }

  @Test
  void pushToAnUnavailablePserver_isRetriedWithTheSameIdentity_untilAcknowledged() {
    int planned = cluster.planner.pushes(filled(1f), 1).size();
    long plannedTo0 =
        cluster.planner.pushes(filled(1f), 1).stream().filter(p -> p.pserver() == 0).count();
    cluster.get(0).unavailableFor(1);
    int before = cluster.get(0).pushes();

    int applied = cluster.client.push(filled(1f), values);

    assertThat(applied).isEqualTo(planned);
    assertThat(cluster.get(0).pushes() - before).isEqualTo(2);
    assertThat(cluster.get(0).lastPushes(2))
        .extracting(r -> r.getSession() + "/" + r.getStep() + "/" + r.getPart())
        .containsOnly(cluster.get(0).lastPushes(1).get(0).getSession() + "/1/0");
    assertThat(cluster.traffic.droppedPushes()).isZero();
    // sent twice, acknowledged once
    assertThat(cluster.traffic.acknowledgedPushes(0)).isEqualTo(plannedTo0);
    assertThat(cluster.traffic.acknowledgedPushes().values().stream().mapToLong(n -> n).sum())
        .isEqualTo(planned);
    assertThat(cluster.traffic.bytesPushed()).isPositive();
  }

  @Test
  void pushToARestartedPserver_reinitialisesIt_andThenAppliesTheGradient() {
    cluster.get(1).wipe();
    Parameters latest = filled(2f);

    cluster.client.push(filled(1f), latest);

    BlockSpec b = firstBlockOf(1);
    assertThat(cluster.get(1).initialised()).isTrue();
    assertThat(cluster.get(1).value(b.name(), b.block(), 0))
        .isEqualTo(2f - PserverCluster.LEARNING_RATE);
    assertThat(cluster.traffic.droppedPushes()).isZero();
  }

  @Test
  void pserverLosingItsStateBetweenPushAndPull_isReinitialisedWithTheLatestValues_notTheBuffer() {
    // a pserver that does not return values in push answers: pushAndPull pulls them after the
    // push, into a buffer that (in a pipelined push) holds no values yet
    cluster.get(1).ignoreReturnValues();
    cluster.get(1).wipeAfterNextPush();
    Parameters latest = filled(2f);
    Parameters into = filled(0f);

    cluster.client.pushAndPull(filled(1f), latest, into);

    BlockSpec b = firstBlockOf(1);
    assertThat(cluster.get(1).initialised()).isTrue();
    assertThat(cluster.get(1).value(b.name(), b.block(), 0)).as("re-initialised").isEqualTo(2f);
    assertThat(into.dense(b.name())[(int) b.offset()]).as("pulled").isEqualTo(2f);
    assertThat(latest.dense(b.name())[(int) b.offset()]).as("latest, unchanged").isEqualTo(2f);
  }

  @Test
  void withdrawnSyncStep_isPushedAgain_untilApplied() throws Exception {
    stop();
    start(true);
    int planned = cluster.planner.pushes(filled(1f), 1).size();
    assertThat(planned).isEqualTo(2); // one push per pserver per step in synchronous mode
    cluster.get(0).withdrawPushes(1);

    assertThat(cluster.client.push(filled(1f), values)).isEqualTo(2);
    assertThat(cluster.client.push(filled(1f), values)).isEqualTo(2);

    BlockSpec a = firstBlockOf(0);
    float initial = values.dense(a.name())[(int) a.offset()];
    assertThat(cluster.get(0).value(a.name(), a.block(), 0))
        .isEqualTo(initial - 2 * PserverCluster.LEARNING_RATE);
    assertThat(cluster.traffic.droppedPushes()).isZero();
  }

  @Test
  void stopRequested_whilePushRetries_givesUpWithStopped_andCountsTheDroppedPush() {
    cluster.get(0).unavailableFor(1_000_000);
    cluster.stop.request();

    assertThatThrownBy(() -> cluster.client.push(filled(1f), values))
        .isInstanceOf(StoppedException.class)
        .hasMessageContaining("pushing gradients to pserver 0");
    assertThat(cluster.traffic.droppedPushes()).isPositive();
  }

  @Test
  void stopRequested_whilePullRetries_givesUpWithStopped() {
    cluster.get(0).unavailableFor(1_000_000);
    cluster.stop.request();

    assertThatThrownBy(() -> cluster.client.pull(values))
        .isInstanceOf(StoppedException.class)
        .hasMessageContaining("pulling parameters from pserver 0");
  }
}
