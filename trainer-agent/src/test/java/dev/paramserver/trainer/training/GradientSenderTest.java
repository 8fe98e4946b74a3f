package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
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
 * The pipelined sender against fake pservers over in-process gRPC (real etcd): the trainer reads
 * its own writes while pushes are in flight, gradients held meanwhile leave summed once the push in
 * flight is answered, and every gradient is applied exactly once. Values start at zero and
 * gradients are small integers, so that with the learning rate of 0.5 (the fake pservers' and the
 * layout's SGD) every sum is exact in float32 and the checks are bit for bit.
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

  private void assertValues(float expected, String when) {
    for (String name : values.denseNames()) {
      assertThat(values.dense(name)).as(name + " " + when).containsOnly(expected);
    }
  }

  @Test
  void whileAPushIsInFlight_theTrainerReadsItsOwnWrites_andHeldGradientsLeaveSummed()
      throws Exception {
    CountDownLatch firstPush = cluster.get(0).holdNextPush();
    float total = 0;
    try (GradientSender sender =
        new GradientSender(cluster.client, cluster.model, values, cluster.stop, true, 4)) {
      Parameters grads = Parameters.zerosLike(cluster.model);
      // 1: sent and held up at pserver 0; 2-4: held (4 unacknowledged, the lag), each already in
      // the values the next batch is computed on
      for (int i = 1; i <= 4; i++) {
        fill(grads, i);
        total += i;
        grads = sender.send(grads);
        assertThat(grads.dense(grads.denseNames().iterator().next())).containsOnly(0f);
        assertValues(-PserverCluster.LEARNING_RATE * total, "after batch " + i);
        if (i == 1) {
          assertThat(firstPush.await(10, TimeUnit.SECONDS)).as("push 1 arrived").isTrue();
        }
      }
      assertThat(cluster.get(0).pushes()).as("pushes reaching pserver 0 while 1 is held").isOne();
      cluster.get(0).releasePush();
      // 5 would be the fifth unacknowledged batch: it waits for push 1, then leaves with 2-4
      fill(grads, 5);
      total += 5;
      grads = sender.send(grads);
      assertValues(-PserverCluster.LEARNING_RATE * total, "after batch 5");
      sender.awaitInFlight();
    }

    assertThat(cluster.get(0).pushes()).as("pushes reaching pserver 0").isEqualTo(2);
    float expected = -PserverCluster.LEARNING_RATE * total;
    assertValues(expected, "taken in after the last push");
    Parameters served = Parameters.zerosLike(cluster.model);
    cluster.client.pull(served);
    for (String name : served.denseNames()) {
      assertThat(served.dense(name)).as("the pservers' " + name).containsOnly(expected);
    }
  }

  @Test
  void withoutLag_eachBatchWaitsForItsPush() throws Exception {
    try (GradientSender sender =
        new GradientSender(cluster.client, cluster.model, values, cluster.stop, true, 0)) {
      Parameters grads = Parameters.zerosLike(cluster.model);
      for (int i = 1; i <= 5; i++) {
        fill(grads, 1);
        grads = sender.send(grads);
        assertThat(cluster.get(0).pushes())
            .as("pushes applied when batch %d returns", i)
            .isEqualTo(i);
        assertValues(-PserverCluster.LEARNING_RATE * i, "after batch " + i);
      }
      sender.awaitInFlight();
    }
    assertThat(cluster.get(0).pushes()).isEqualTo(5);
  }

  /**
   * A gradient that depends on the values it is computed on (so stale values give another result)
   * and keeps them integers under a learning rate of 0.5: {@code 2 * ((w + i + t) mod 5 - 2)}.
   */
  private static void gradient(Parameters at, Parameters into, int t) {
    for (String name : at.denseNames()) {
      float[] w = at.dense(name);
      float[] g = into.dense(name);
      for (int i = 0; i < w.length; i++) {
        g[i] = 2 * (Math.floorMod((int) w[i] + i + t, 5) - 2);
      }
    }
  }

  @Test
  void oneTrainerWithSgd_trainsExactlyAsSequentialSgd_bitForBit() throws Exception {
    Parameters sequential = Parameters.zerosLike(cluster.model);
    Parameters g = Parameters.zerosLike(cluster.model);
    int steps = 60;
    CountDownLatch firstPush = cluster.get(0).holdNextPush();
    try (GradientSender sender =
        new GradientSender(cluster.client, cluster.model, values, cluster.stop, true, 3)) {
      Parameters grads = Parameters.zerosLike(cluster.model);
      for (int t = 1; t <= steps; t++) {
        gradient(sequential, g, t);
        for (String name : sequential.denseNames()) {
          float[] w = sequential.dense(name);
          float[] gi = g.dense(name);
          for (int i = 0; i < w.length; i++) {
            w[i] -= PserverCluster.LEARNING_RATE * gi[i];
          }
        }
        gradient(values, grads, t);
        grads = sender.send(grads);
        for (String name : values.denseNames()) {
          assertThat(values.dense(name))
              .as("%s after step %d", name, t)
              .containsExactly(sequential.dense(name));
        }
        if (t == 1) {
          assertThat(firstPush.await(10, TimeUnit.SECONDS)).as("push 1 arrived").isTrue();
        }
        if (t == 3) {
          // three batches trained while the first push was held: each saw the ones before
          cluster.get(0).releasePush();
        }
      }
      sender.awaitInFlight();
    }
    Parameters served = Parameters.zerosLike(cluster.model);
    cluster.client.pull(served);
    for (String name : values.denseNames()) {
      assertThat(values.dense(name)).as(name).containsExactly(sequential.dense(name));
      assertThat(served.dense(name))
          .as("the pservers' " + name)
          .containsExactly(sequential.dense(name));
    }
    assertThat(cluster.get(0).pushes()).as("pushes (several batches each)").isLessThan(steps);
  }
}
