package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.coordination.EtcdCoordinator;
import dev.paramserver.coordination.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Parameters;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.testing.PserverCluster;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The pipelined sender against fake pservers over in-process gRPC (real etcd): gradients held while
 * a push is in flight leave summed in the next push, and every gradient is applied exactly once.
 * Values start at zero and gradients are small integers, so that with the fake pservers' learning
 * rate of 0.5 every sum is exact in float32 and the check is bit for bit.
 */
@Timeout(60)
class GradientSenderTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private PserverCluster cluster;
  private Parameters values;

  @BeforeEach
  void start() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    cluster = new PserverCluster(coordinator, 2, 2, false);
    values = Initializers.initial(cluster.model, 42);
    for (String name : values.denseNames()) {
      Arrays.fill(values.dense(name), 0f);
    }
    cluster.initializer.ensureAll(values);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
    coordinator.close();
  }

  private static void fill(Parameters grads, float v) {
    for (String name : grads.denseNames()) {
      Arrays.fill(grads.dense(name), v);
    }
  }

  @Test
  void heldGradients_leaveSummedInTheNextPush_andEveryOneIsAppliedOnce() throws Exception {
    CountDownLatch firstPush = cluster.get(0).holdNextPush();
    float total = 0;
    try (GradientSender sender =
        new GradientSender(cluster.client, cluster.model, values, cluster.stop, true, 3)) {
      Parameters grads = Parameters.zerosLike(cluster.model);
      // 1: sent and held up at pserver 0; 2-4: held; 5: leaves with 2-4 (queued behind 1);
      // 6: held until the flush
      for (int i = 1; i <= 6; i++) {
        fill(grads, i);
        total += i;
        grads = sender.send(grads);
        assertThat(grads.dense(grads.denseNames().iterator().next())).containsOnly(0f);
        if (i == 1) {
          assertThat(firstPush.await(10, TimeUnit.SECONDS)).as("push 1 arrived").isTrue();
        }
      }
      cluster.get(0).releasePush();
      sender.awaitInFlight();
    }

    assertThat(cluster.get(0).pushes()).as("pushes reaching pserver 0").isEqualTo(3);
    float expected = -PserverCluster.LEARNING_RATE * total;
    for (String name : values.denseNames()) {
      assertThat(values.dense(name))
          .as(name + " taken in after the last push")
          .containsOnly(expected);
    }
    String first = values.denseNames().iterator().next();
    float held0 = cluster.get(0).value(first, 0, 0);
    assertThat(Float.isNaN(held0) ? cluster.get(1).value(first, 0, 0) : held0)
        .as("the pservers' value")
        .isEqualTo(expected);
  }

  @Test
  void withoutLag_eachGradientIsItsOwnPush() throws Exception {
    float total = 0;
    try (GradientSender sender =
        new GradientSender(cluster.client, cluster.model, values, cluster.stop, true, 0)) {
      Parameters grads = Parameters.zerosLike(cluster.model);
      for (int i = 1; i <= 5; i++) {
        fill(grads, 1);
        total += 1;
        grads = sender.send(grads);
      }
      sender.awaitInFlight();
    }
    assertThat(cluster.get(0).pushes()).isEqualTo(5);
    for (String name : values.denseNames()) {
      assertThat(values.dense(name)).containsOnly(-PserverCluster.LEARNING_RATE * total);
    }
  }
}
