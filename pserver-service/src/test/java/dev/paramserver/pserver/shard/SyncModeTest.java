package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.sync.EtcdTrainerMembership;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** SYNC and BOUNDED_STALENESS with trainer membership from a real etcd. */
class SyncModeTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final Duration WAIT = Duration.ofSeconds(15);

  private EtcdCoordinator coordinator;
  private EtcdTrainerMembership membership;
  private final Map<String, Lease> trainers = new HashMap<>();
  private final List<AutoCloseable> cleanup = new ArrayList<>();
  private ExecutorService pool;
  private ParameterShard shard;
  private SyncAggregator sync;

  @BeforeEach
  void setUp() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    membership = new EtcdTrainerMembership(coordinator, Duration.ofSeconds(1));
    pool = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() {
    pool.shutdownNow();
    trainers.values().forEach(Lease::revoke);
    membership.close();
    coordinator.close();
  }

  /** A shard with w = [10, 20], SGD lr 1, in the given mode. */
  private void start(TrainingMode mode, int staleness, Duration timeout) {
    shard = new ParameterShard(true);
    sync = new SyncAggregator(shard, membership, timeout);
    shard.attachSync(sync);
    shard.init(
        init("s", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 10, 20))).toBuilder()
            .setMode(mode)
            .setStaleness(staleness)
            .build());
    shard.finishInit(finish("s", 1));
  }

  private void join(String id) {
    Lease lease = coordinator.grantLease(Duration.ofSeconds(5));
    coordinator
        .kv()
        .put(coordinator.keys().trainer(id), "x".getBytes(StandardCharsets.UTF_8), lease);
    trainers.put(id, lease);
    Poll.until(WAIT, () -> membership.live().contains(id), "trainer " + id + " seen live");
  }

  private void die(String id) {
    trainers.remove(id).revoke();
    Poll.until(WAIT, () -> !membership.live().contains(id), "trainer " + id + " seen gone");
  }

  private Future<Long> push(String trainer, float g0, float g1) {
    PushGradientsRequest r =
        PushGradientsRequest.newBuilder()
            .setTrainerId(trainer)
            .addGradients(gradient("w", 0, g0, g1))
            .build();
    return pool.submit(() -> shard.push(r));
  }

  private float[] values() {
    return TensorCodec.decode(shard.pull(Requests.pullAll()).getBlocks(0).getData());
  }

  private void awaitPending(int n) {
    Poll.until(WAIT, () -> sync.pending() == n, n + " pending contributions");
  }

  private static long get(Future<Long> f) throws Exception {
    return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  @Test
  void step_waitsForEveryLiveTrainer_thenAppliesTheSumOnce() throws Exception {
    join("t1");
    join("t2");
    start(TrainingMode.SYNC, 0, WAIT);
    Future<PullParametersResponse> pull =
        pool.submit(() -> shard.pull(PullParametersRequest.newBuilder().setMinStep(1).build()));
    Future<Long> p1 = push("t1", 1, 2);
    awaitPending(1);
    assertThat(p1.isDone()).isFalse();
    assertThat(pull.isDone()).isFalse();
    assertThat(shard.step()).isZero();
    assertThat(values()).containsExactly(10f, 20f);

    Future<Long> p2 = push("t2", 3, 4);
    assertThat(get(p1)).isEqualTo(1);
    assertThat(get(p2)).isEqualTo(1);
    // w - lr * (g1 + g2) = [10 - 4, 20 - 6]
    assertThat(values()).containsExactly(6f, 14f);
    PullParametersResponse pulled = pull.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(pulled.getStep()).isEqualTo(1);
    assertThat(TensorCodec.decode(pulled.getBlocks(0).getData())).containsExactly(6f, 14f);
  }

  @Test
  void deadTrainer_isDropped_soTheStepCompletesWithoutIt() throws Exception {
    join("t1");
    join("t2");
    start(TrainingMode.SYNC, 0, WAIT);
    Future<Long> p1 = push("t1", 1, 1);
    awaitPending(1);
    die("t2");
    assertThat(get(p1)).isEqualTo(1);
    assertThat(values()).containsExactly(9f, 19f);
  }

  @Test
  void joiningTrainer_isCountedFromTheNextStep() throws Exception {
    join("t1");
    join("t2");
    start(TrainingMode.SYNC, 0, WAIT);
    Future<Long> p1 = push("t1", 1, 0);
    awaitPending(1);
    join("t3");
    Future<Long> p3 = push("t3", 100, 100);
    awaitPending(2);
    Future<Long> p2 = push("t2", 0, 1);
    // step 0: t1 + t2 only
    assertThat(get(p1)).isEqualTo(1);
    assertThat(get(p2)).isEqualTo(1);
    assertThat(p3.isDone()).isFalse();
    assertThat(shard.step()).isEqualTo(1);
    assertThat(values()).containsExactly(9f, 19f);
    // step 1: t3's waiting gradient plus t1 and t2
    Future<Long> q1 = push("t1", 1, 1);
    Future<Long> q2 = push("t2", 1, 1);
    assertThat(get(p3)).isEqualTo(2);
    assertThat(get(q1)).isEqualTo(2);
    assertThat(get(q2)).isEqualTo(2);
    assertThat(values()).containsExactly(9f - 102f, 19f - 102f);
  }

  @Test
  void stepThatTimesOut_isAborted_andThePushWithdrawn() throws Exception {
    join("t1");
    join("t2");
    start(TrainingMode.SYNC, 0, Duration.ofMillis(300));
    Throwable t = catchThrowable(() -> get(push("t1", 1, 1)));
    assertThat(t).isInstanceOf(ExecutionException.class);
    assertThat(t.getCause())
        .isInstanceOfSatisfying(
            ServiceException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.SYNC_ABORTED))
        .hasMessageContaining("t2");
    assertThat(sync.pending()).isZero();
    assertThat(shard.step()).isZero();
    assertThat(values()).containsExactly(10f, 20f);
  }

  @Test
  void shutdown_failsWaitingPushesAtOnce() throws Exception {
    join("t1");
    join("t2");
    start(TrainingMode.SYNC, 0, WAIT);
    Future<Long> p1 = push("t1", 1, 1);
    awaitPending(1);
    pool.submit(shard::beginDraining);
    Throwable t = catchThrowable(() -> get(p1));
    assertThat(t.getCause())
        .isInstanceOfSatisfying(
            ServiceException.class,
            e -> assertThat(e.reason()).isEqualTo(ErrorReason.SHUTTING_DOWN));
  }

  @Test
  void boundedStaleness_holdsBackATrainerTooFarAhead() throws Exception {
    join("t1");
    join("t2");
    start(TrainingMode.BOUNDED_STALENESS, 1, WAIT);
    // t1 may run one push ahead of t2: pushes 1 and 2 pass, push 3 waits for t2.
    assertThat(get(push("t1", 1, 1))).isEqualTo(1);
    assertThat(get(push("t1", 1, 1))).isEqualTo(2);
    Future<Long> third = push("t1", 1, 1);
    awaitPending(1);
    assertThat(third.isDone()).isFalse();
    assertThat(values()).containsExactly(8f, 18f);
    assertThat(get(push("t2", 1, 1))).isGreaterThanOrEqualTo(3);
    assertThat(get(third)).isGreaterThanOrEqualTo(3);
    assertThat(values()).containsExactly(6f, 16f);
  }

  @Test
  void boundedStaleness_stopsWaitingForADeadTrainer() throws Exception {
    join("t1");
    join("t2");
    start(TrainingMode.BOUNDED_STALENESS, 0, WAIT);
    assertThat(get(push("t1", 1, 1))).isEqualTo(1);
    Future<Long> second = push("t1", 1, 1);
    awaitPending(1);
    die("t2");
    assertThat(get(second)).isEqualTo(2);
  }
}
