package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** etcd paused, killed and restarted under a coordinator: its own etcd, as it breaks it. */
class EtcdFaultsTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;

  @BeforeEach
  void connect() throws InterruptedException {
    coordinator =
        EtcdCoordinator.connect(
            new EtcdSettings(
                List.of(etcd.endpoint()),
                etcd.uniqueJob(),
                Duration.ofSeconds(1),
                null,
                null,
                null));
    // the first connection of the JVM sets up gRPC and Netty: seconds on a loaded machine
    assertThat(coordinator.awaitConnected(Duration.ofSeconds(30))).isTrue();
  }

  @AfterEach
  void close() {
    if (!etcd.server().isRunning()) {
      etcd.server().restart();
    }
    coordinator.close();
  }

  @Test
  void leaseLoss_isDetected_whenEtcdIsPausedLongerThanTheTtl() {
    var lease = coordinator.grantLease(Duration.ofSeconds(2));
    AtomicInteger fired = new AtomicInteger();
    lease.onLost(fired::incrementAndGet);
    etcd.server().pause();
    try {
      Poll.until(Duration.ofSeconds(6), () -> fired.get() == 1, "onLost while etcd is paused");
      assertThat(lease.isAlive()).isFalse();
      Poll.until(Duration.ofSeconds(4), () -> !coordinator.isConnected(), "isConnected false");
    } finally {
      etcd.server().resume();
    }
    Poll.until(Duration.ofSeconds(6), coordinator::isConnected, "reconnected after resume");
    assertThat(fired.get()).isEqualTo(1);
    var fresh = coordinator.grantLease(Duration.ofSeconds(2));
    assertThat(fresh.isAlive()).isTrue();
    fresh.revoke();
  }

  @Test
  void calls_timeOut_whenEtcdIsStopped_andWorkAgainAfterRestart() {
    String key = coordinator.keys().prefix() + "k";
    coordinator.kv().put(key, "before".getBytes(UTF_8));
    List<KeyValueStore.WatchEvent> seen = new CopyOnWriteArrayList<>();
    AutoCloseable watch = coordinator.kv().watchPrefix(coordinator.keys().prefix(), seen::add);

    etcd.server().kill();
    long start = System.nanoTime();
    assertThatThrownBy(() -> coordinator.kv().get(key))
        .isInstanceOf(CoordinationException.class)
        .hasMessageContaining("get " + key)
        .hasMessageContaining("timed out");
    assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(4000);
    assertThat(coordinator.isConnected()).isFalse();

    etcd.server().restart();
    Poll.until(Duration.ofSeconds(10), coordinator::isConnected, "reconnected after restart");
    assertThat(coordinator.kv().get(key).orElseThrow().valueAsString()).isEqualTo("before");
    coordinator.kv().put(key, "after".getBytes(UTF_8));
    Poll.until(
        Duration.ofSeconds(10),
        () -> seen.stream().anyMatch(e -> e.keyValue().valueAsString().equals("after")),
        "the watch to see a put made after etcd restarted");
    try {
      watch.close();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void lostLease_isRevokedOnceEtcdIsBack_soItsKeysVanishBeforeTheTtl() {
    var lease = coordinator.grantLease(Duration.ofSeconds(6));
    String key = coordinator.keys().ps(0);
    coordinator.kv().put(key, "old".getBytes(UTF_8), lease);
    AtomicInteger fired = new AtomicInteger();
    lease.onLost(fired::incrementAndGet);

    etcd.server().kill();
    Poll.until(Duration.ofSeconds(10), () -> fired.get() == 1, "onLost while etcd is down");
    etcd.server().restart(); // etcd keeps the lease and extends it by its TTL on restart

    long start = System.nanoTime();
    Poll.until(
        Duration.ofSeconds(10),
        Duration.ofMillis(100),
        () -> {
          try {
            return coordinator.kv().get(key).isEmpty();
          } catch (CoordinationException notYet) {
            return false;
          }
        },
        "the lost lease's key to vanish");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void close_withEtcdDown_takesAboutOneCallTimeout() {
    for (int i = 0; i < 5; i++) {
      coordinator.grantLease(Duration.ofSeconds(10));
    }
    etcd.server().kill();
    long start = System.nanoTime();
    coordinator.close();
    // one revoke after another would take 5 call timeouts (5 s)
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(3500));
    assertThat(coordinator.isConnected()).isFalse();
  }
}
