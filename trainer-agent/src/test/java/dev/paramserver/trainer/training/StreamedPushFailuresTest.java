package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Parameters;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.trainer.pserver.StreamedPush;
import dev.paramserver.trainer.testing.FakePserver;
import dev.paramserver.trainer.testing.PserverCluster;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The pipelined sender's streamed pushes when a stream breaks or is refused, against fake pservers
 * over in-process gRPC (real etcd). One trainer with SGD trains exactly as sequential SGD (bit for
 * bit: values start at zero, gradients are small integers), so a push lost, applied twice or taken
 * in out of order shows in the values; the fakes also count the applications of each identity.
 */
@Timeout(60)
class StreamedPushFailuresTest {
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

  /** {@code 2 * ((w + i + t) mod 5 - 2)}: depends on the values, integers under lr 0.5. */
  private static void gradient(Parameters at, Parameters into, int t) {
    for (String name : at.denseNames()) {
      float[] w = at.dense(name);
      float[] g = into.dense(name);
      for (int i = 0; i < w.length; i++) {
        g[i] = 2 * (Math.floorMod((int) w[i] + i + t, 5) - 2);
      }
    }
  }

  /** Trains {@code steps} batches pipelined and checks values and pservers against plain SGD. */
  private void trainsAsSequentialSgd(int steps) {
    Parameters sequential = Parameters.zerosLike(cluster.model);
    Parameters g = Parameters.zerosLike(cluster.model);
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
      }
      sender.awaitInFlight();
    }
    Parameters served = Parameters.zerosLike(cluster.model);
    cluster.client.pull(served);
    for (String name : values.denseNames()) {
      assertThat(served.dense(name))
          .as("the pservers' " + name)
          .containsExactly(sequential.dense(name));
    }
    for (FakePserver ps : cluster.pservers) {
      assertThat(ps.applications().values())
          .as("applications of each push identity")
          .containsOnly(1);
    }
    assertThat(cluster.traffic.droppedPushes()).as("pushes dropped").isZero();
  }

  @Test
  void aStreamBrokenMidway_resendsItsUnansweredPushesWithTheirIdentities_appliedOnce() {
    // pserver 0 applies its 3rd streamed push and breaks the stream instead of answering it;
    // pserver 1 does the same with its 5th
    cluster.get(0).breakStreamAfter(3);
    cluster.get(1).breakStreamAfter(5);
    trainsAsSequentialSgd(40);
    for (FakePserver ps : cluster.pservers) {
      assertThat(ps.streamCalls()).as("streams opened (one after the break)").isEqualTo(2);
    }
    assertThat(cluster.traffic.duplicatePushes())
        .as("the pushes applied without their answer, answered duplicate when resent")
        .isEqualTo(2);
    long sent = cluster.get(0).applications().size();
    assertThat(cluster.traffic.acknowledgedPushes(0)).as("acknowledged, each once").isEqualTo(sent);
  }

  @Test
  void aPserverWithoutStreamPushes_getsItsPushesOneAtATimeByPushGradients() {
    cluster.get(0).refuseStreams();
    trainsAsSequentialSgd(30);
    assertThat(cluster.get(0).streamCalls()).as("streams tried on pserver 0").isOne();
    assertThat(cluster.get(0).streamedPushes()).as("pushes streamed to pserver 0").isZero();
    assertThat(cluster.get(0).pushes()).as("unary pushes to pserver 0").isPositive();
    assertThat(cluster.get(1).streamedPushes())
        .as("pushes streamed to pserver 1")
        .isEqualTo(cluster.get(1).pushes());
  }

  @Test
  void aPushRefusedForGood_failsTraining() {
    cluster.get(0).rejectPushes();
    Parameters grads = Parameters.zerosLike(cluster.model);
    try (GradientSender sender =
        new GradientSender(cluster.client, cluster.model, values, cluster.stop, true, 3)) {
      gradient(values, grads, 1);
      // the refusal surfaces at the first look after it arrived: in send itself when the
      // in-process answer is that fast, else while waiting for the push
      assertThatThrownBy(
              () -> {
                sender.send(grads);
                sender.awaitInFlight();
              })
          .isInstanceOf(StatusRuntimeException.class)
          .hasMessageContaining("rejects the push");
      // every later look fails the same way: the lane is never written again
      assertThatThrownBy(() -> sender.send(Parameters.zerosLike(cluster.model)))
          .isInstanceOf(StatusRuntimeException.class);
    }
  }

  @Test
  void aPushLeftToResend_isAcknowledgedWhileAnotherThreadWaitsForIt() throws Exception {
    cluster.get(0).breakStreamAfter(1);
    StreamedPush push =
        cluster.client.startPush(
            values, Parameters.zerosLike(cluster.model), Parameters.zerosLike(cluster.model));
    // the writing thread does not look again: the thread waiting for the acknowledgement (a
    // task's report) drives the streams, so the broken stream's push is written again
    Future<Void> ack = cluster.client.streams().acknowledgement(push);
    ExecutorService reporter = Executors.newSingleThreadExecutor();
    try {
      reporter.submit(() -> ack.get(20, TimeUnit.SECONDS)).get(30, TimeUnit.SECONDS);
    } finally {
      reporter.shutdownNow();
    }
    assertThat(cluster.get(0).streamCalls()).as("streams opened to pserver 0").isEqualTo(2);
    // the answers are counted as they are taken in: at the writer's next look
    cluster.client.streams().await(push);
    assertThat(push.isComplete()).isTrue();
    assertThat(cluster.traffic.duplicatePushes()).as("the resent push, a duplicate").isOne();
    assertThat(cluster.get(0).applications().values()).containsOnly(1);
  }

  @Test
  void aPserverWhoseRegistrationEnded_getsItsPushesOnceRegisteredAgain() throws Exception {
    String key = coordinator.keys().ps(0);
    coordinator.kv().delete(key);
    Poll.until(
        Duration.ofSeconds(10),
        () -> cluster.directory.address(0) == null,
        "the trainer saw pserver 0 deregister");
    StreamedPush push =
        cluster.client.startPush(
            values, Parameters.zerosLike(cluster.model), Parameters.zerosLike(cluster.model));
    cluster.client.streams().poll();
    assertThat(push.isComplete()).as("answered while pserver 0 has no address").isFalse();

    coordinator.kv().put(key, cluster.get(0).address().getBytes(StandardCharsets.UTF_8));
    cluster.client.streams().await(push);
    assertThat(cluster.get(0).applications().values())
        .as("pserver 0's push, applied")
        .containsOnly(1);
  }
}
