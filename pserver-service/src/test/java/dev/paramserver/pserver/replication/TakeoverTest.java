package dev.paramserver.pserver.replication;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.persistence.TestProperties;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;

/**
 * A backup whose primary is gone takes its shard over (no copy held: it loads the checkpoint).
 * Loading fails here on purpose: the takeover is retried, or gives the index back, and shutdown
 * never waits behind it.
 */
class TakeoverTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private Path dir;
  private final ParameterShard shard = new ParameterShard(true);
  private final ShardLifecycle lifecycle = new ShardLifecycle(shard);
  private final AtomicInteger roleLost = new AtomicInteger();
  private final AtomicInteger promoted = new AtomicInteger(-1);
  private Replication replication;
  private Lease lease;

  /** Loads a one-block shard, after failing {@code failures} times (or blocking on a latch). */
  private final class FlakyPersistence implements ShardPersistence {
    final AtomicInteger loads = new AtomicInteger();
    final int failures;
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch proceed;

    FlakyPersistence(int failures, boolean block) {
      this.failures = failures;
      this.proceed = new CountDownLatch(block ? 1 : 0);
    }

    @Override
    public void load(int index) {
      entered.countDown();
      try {
        if (!proceed.await(20, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never let the load proceed");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", e);
      }
      if (loads.incrementAndGet() <= failures) {
        throw new IllegalStateException("checkpoint store unreachable (load " + loads + ")");
      }
      // as a checkpoint is loaded: restored, past the held calls
      shard.restore(oneBlockCheckpoint());
    }

    @Override
    public void startLog(int index) {}

    @Override
    public void checkpoint() {}

    @Override
    public void discardLog(int index) {}
  }

  /** A checkpoint of a one-block shard. */
  private static ShardCheckpoint oneBlockCheckpoint() {
    ParameterShard source = new ParameterShard(true);
    source.init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 1, 1))));
    source.finishInit(finish("i", 1));
    return source.snapshot();
  }

  @BeforeEach
  void setUp() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    dir = TempDirs.create("takeover");
    lease = coordinator.grantLease(Duration.ofSeconds(10));
  }

  @AfterEach
  void tearDown() {
    if (replication != null) {
      replication.close();
    }
    lease.revoke();
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  private PserverProperties properties() {
    return TestProperties.of(
        dir.toString(),
        Duration.ZERO,
        PserverProperties.Wal.defaults(),
        PserverProperties.CheckpointConsistency.INDEPENDENT,
        2,
        Duration.ofSeconds(2));
  }

  /** This pserver becomes the backup of shard 0, whose primary is not registered. */
  private void backupOfAGoneprimary(ShardPersistence persistence) {
    DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
    beans.registerSingleton("persistence", persistence);
    replication =
        new Replication(
            coordinator,
            shard,
            lifecycle,
            properties(),
            beans.getBeanProvider(ShardPersistence.class),
            ChannelFactory.plaintext(),
            new SimpleMeterRegistry());
    replication.onRoleLost(roleLost::incrementAndGet);
    replication.becomeBackup(0, "127.0.0.1:1", lease, promoted::set);
  }

  private String ps0() {
    return coordinator.keys().ps(0);
  }

  @Test
  void takeover_whoseLoadFailsOnce_isRetried_andTheShardServesAsPrimary() {
    FlakyPersistence persistence = new FlakyPersistence(1, false);
    backupOfAGoneprimary(persistence);

    // the registration is told after the role moved: wait for both
    Poll.until(
        Duration.ofSeconds(15),
        () -> lifecycle.role() == ShardRole.PRIMARY && promoted.get() == 0,
        "the takeover");
    assertThat(persistence.loads).hasValue(2);
    assertThat(promoted).hasValue(0);
    assertThat(shard.index()).isZero();
    assertThat(shard.push(push(gradient("w", 0, 1, 1)))).isEqualTo(1);
    assertThat(coordinator.kv().get(ps0()).orElseThrow().leaseId()).isEqualTo(lease.id());
    assertThat(roleLost).hasValue(0);
  }

  @Test
  void takeover_thatKeepsFailing_releasesTheIndex_whichAnotherPserverCanClaim() {
    FlakyPersistence persistence = new FlakyPersistence(Integer.MAX_VALUE, false);
    backupOfAGoneprimary(persistence);

    Poll.until(Duration.ofSeconds(15), () -> roleLost.get() == 1, "the takeover to give up");
    assertThat(persistence.loads).hasValue(Takeover.ATTEMPTS);
    assertThat(lifecycle.role()).isEqualTo(ShardRole.UNCLAIMED);
    assertThat(shard.index()).isEqualTo(-1);
    assertThat(promoted).hasValue(-1); // nothing was installed
    assertThat(coordinator.kv().get(ps0())).isEmpty();
    Lease other = coordinator.grantLease(Duration.ofSeconds(10));
    try {
      assertThat(
              coordinator.kv().putIfAbsent(ps0(), "other".getBytes(StandardCharsets.UTF_8), other))
          .isTrue();
    } finally {
      other.revoke();
    }
  }

  @Test
  void close_duringATakeoverThatWaits_returnsAtOnce_andTheTakeoverGivesTheIndexBack()
      throws InterruptedException {
    FlakyPersistence persistence = new FlakyPersistence(0, true);
    backupOfAGoneprimary(persistence);
    assertThat(persistence.entered.await(15, TimeUnit.SECONDS)).isTrue();

    long start = System.nanoTime();
    replication.close();
    long closeMs = (System.nanoTime() - start) / 1_000_000;
    persistence.proceed.countDown();

    assertThat(closeMs).isLessThan(2_000);
    Poll.until(Duration.ofSeconds(15), () -> coordinator.kv().get(ps0()).isEmpty(), "release");
    assertThat(lifecycle.role()).isNotEqualTo(ShardRole.PRIMARY);
  }
}
