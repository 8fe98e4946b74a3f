package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.trainer.testing.FakePserver;
import dev.paramserver.trainer.testing.PserverCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Pushes on the pservers' push streams, written and taken in by the calling thread, against fake
 * pservers over in-process gRPC (real etcd): several in flight on one stream are answered in order,
 * each with the values after it; {@code acknowledged_through} says what was acknowledged; a pserver
 * that stops reading holds the writer back instead of letting it buffer. Values start at zero and
 * gradients are small integers, so every value is exact in float32.
 */
@Timeout(60)
class StreamedPushesTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private PserverCluster cluster;
  private Parameters values;
  private final ExecutorService writer = Executors.newSingleThreadExecutor();

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
    cluster.stop.request();
    writer.shutdownNow();
    assertThat(writer.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    cluster.close();
    coordinator.close();
  }

  private Parameters filled(float v) {
    Parameters p = Parameters.zerosLike(cluster.model);
    for (String name : p.denseNames()) {
      Arrays.fill(p.dense(name), v);
    }
    return p;
  }

  private static void assertAll(Parameters p, float expected, String what) {
    for (String name : p.denseNames()) {
      assertThat(p.dense(name)).as(name + " " + what).containsOnly(expected);
    }
  }

  @Test
  void pushesInFlight_areAnsweredInOrder_eachWithTheValuesAfterIt() throws Exception {
    AtomicInteger roundTrips = new AtomicInteger();
    cluster.traffic.onPushRoundTrip(nanos -> roundTrips.incrementAndGet());
    CountDownLatch first = cluster.get(0).holdNextPush();
    List<StreamedPush> pushes = new ArrayList<>();
    List<Parameters> into = new ArrayList<>();
    for (int k = 1; k <= 3; k++) {
      Parameters buffer = Parameters.zerosLike(cluster.model);
      into.add(buffer);
      pushes.add(cluster.client.startPush(filled(k), values, buffer));
    }
    assertThat(first.await(10, TimeUnit.SECONDS)).as("push 1 reached pserver 0").isTrue();
    cluster.client.streams().poll();
    assertThat(pushes)
        .as("pushes answered while pserver 0 holds push 1")
        .noneMatch(StreamedPush::isComplete);

    cluster.get(0).releasePush();
    cluster.client.streams().await(pushes.get(2));
    float lr = PserverCluster.LEARNING_RATE;
    float sum = 0;
    for (int k = 1; k <= 3; k++) {
      sum += k;
      assertThat(pushes.get(k - 1).isComplete()).as("push %d taken in", k).isTrue();
      assertAll(into.get(k - 1), -lr * sum, "returned by push " + k);
    }
    for (FakePserver ps : cluster.pservers) {
      assertThat(ps.lastPushes(3))
          .extracting(PushGradientsRequest::getStep)
          .containsExactly(1L, 2L, 3L);
      assertThat(ps.streamCalls()).as("streams opened").isOne();
    }
    // pserver 0 had push 1 unanswered when 2 and 3 were written: none says more than "none before
    // 1"
    assertThat(cluster.get(0).lastPushes(3))
        .extracting(PushGradientsRequest::getAcknowledgedThrough)
        .containsExactly(0L, 0L, 0L);
    cluster.client.streams().await(cluster.client.startPush(filled(1), values, into.get(0)));
    assertThat(cluster.get(0).lastPushes(1).get(0).getAcknowledgedThrough())
        .as("acknowledged_through once 1-3 were answered")
        .isEqualTo(3);
    assertThat(roundTrips.get()).as("round trips timed (one per request)").isEqualTo(8);
    assertThat(cluster.traffic.acknowledgedPushes(0)).isEqualTo(4);
  }

  @Test
  void aPserverThatStopsReading_holdsTheWriterBack_insteadOfBuffering() throws Exception {
    FakePserver ps = cluster.get(0);
    ps.stopReading();
    int pushes = FakePserver.STREAM_WINDOW + 3;
    AtomicReference<Thread> thread = new AtomicReference<>();
    AtomicInteger started = new AtomicInteger();
    Future<StreamedPush> last =
        writer.submit(
            () -> {
              thread.set(Thread.currentThread());
              StreamedPush push = null;
              for (int k = 1; k <= pushes; k++) {
                push =
                    cluster.client.startPush(
                        filled(1), values, Parameters.zerosLike(cluster.model));
                started.incrementAndGet();
              }
              cluster.client.streams().await(push);
              return push;
            });
    // pserver 0 takes the window's pushes and answers them, then reads no more: the next write
    // waits in the writing thread
    Poll.until(
        Duration.ofSeconds(20),
        () -> ps.streamedPushes() == FakePserver.STREAM_WINDOW && waitsToWrite(thread.get()),
        "the writer waits to write to pserver 0");
    assertThat(started.get()).as("pushes written in full").isEqualTo(FakePserver.STREAM_WINDOW);
    assertThat(last).isNotDone();
    assertThat(ps.streamedPushes())
        .as("pushes pserver 0 read")
        .isEqualTo(FakePserver.STREAM_WINDOW);

    ps.resumeReading();
    last.get(20, TimeUnit.SECONDS);
    assertThat(ps.streamedPushes()).isEqualTo(pushes);
    assertThat(ps.applications().values()).hasSize(pushes).containsOnly(1);
  }

  /** True while {@code t} is inside {@code StreamedPushes.start}, waiting (not running). */
  private static boolean waitsToWrite(Thread t) {
    if (t == null || t.getState() == Thread.State.RUNNABLE) {
      return false;
    }
    return Arrays.stream(t.getStackTrace())
        .anyMatch(
            f ->
                f.getClassName().equals(StreamedPushes.class.getName())
                    && f.getMethodName().equals("start"));
  }
}
