package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Keys kept across a lost lease, on a real etcd that is paused and stopped under them. */
class LeasedKeysTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private EtcdCoordinator other;

  @BeforeEach
  void connect() throws InterruptedException {
    String job = etcd.uniqueJob();
    coordinator = connect(job);
    other = connect(job);
  }

  private static EtcdCoordinator connect(String job) throws InterruptedException {
    EtcdCoordinator c =
        EtcdCoordinator.connect(
            new EtcdSettings(
                List.of(etcd.endpoint()), job, Duration.ofSeconds(1), null, null, null));
    assertThat(c.awaitConnected(Duration.ofSeconds(30))).isTrue();
    return c;
  }

  @AfterEach
  void close() {
    if (!etcd.server().isRunning()) {
      etcd.server().restart();
    }
    coordinator.close();
    other.close();
  }

  private String key(String name) {
    return coordinator.keys().prefix() + name;
  }

  @Test
  void etcdPausedPastTheTtl_newLeaseIsTaken_andEveryKeyIsBackUnderIt() {
    LeasedKeys keys =
        LeasedKeys.open(coordinator, Duration.ofSeconds(2), Duration.ofSeconds(30), "holder 'a'");
    keys.put(key("members/a"), "endpoint".getBytes(UTF_8));
    assertThat(keys.claim(key("locks/export"), "a".getBytes(UTF_8))).isTrue();
    assertThat(keys.claim(key("locks/export"), "a".getBytes(UTF_8)))
        .as("a claim held already is ours")
        .isTrue();
    other.kv().put(key("locks/eval"), "b".getBytes(UTF_8));
    assertThat(keys.claim(key("locks/eval"), "a".getBytes(UTF_8)))
        .as("a claim held by another")
        .isFalse();
    long first = keys.lease().id();

    etcd.server().pause();
    try {
      Poll.until(
          Duration.ofSeconds(10),
          () -> keys.state() == LeasedKeys.State.RENEWING,
          "the lease counted lost while etcd is paused");
    } finally {
      etcd.server().resume();
    }
    Poll.until(
        Duration.ofSeconds(20),
        () -> keys.state() == LeasedKeys.State.HELD,
        "renewed after resume");
    long renewed = keys.lease().id();
    assertThat(renewed).isNotEqualTo(first);
    assertThat(keys.renewals()).isEqualTo(1);
    // the old lease ends in etcd (revoked once etcd answers): the keys stay, under the new one
    Poll.until(
        Duration.ofSeconds(10),
        () ->
            other.kv().get(key("members/a")).map(k -> k.leaseId() == renewed).orElse(false)
                && other
                    .kv()
                    .get(key("locks/export"))
                    .map(k -> k.leaseId() == renewed)
                    .orElse(false),
        "both keys under the new lease");
    assertThat(other.kv().get(key("members/a")).orElseThrow().valueAsString())
        .isEqualTo("endpoint");

    keys.close();
    assertThat(other.kv().get(key("members/a"))).as("closing revokes").isEmpty();
    assertThat(keys.state()).isEqualTo(LeasedKeys.State.CLOSED);
  }

  @Test
  void leaseEndedInEtcdUnnoticed_aClaimAndAPutRenewItFirst_insteadOfFailingOnTheDeadLease()
      throws Exception {
    // a TTL of 30 s: the holder's keep-alive (every 10 s) does not notice the end for a while, as
    // in a process resumed after a pause past its TTL
    LeasedKeys keys =
        LeasedKeys.open(coordinator, Duration.ofSeconds(30), Duration.ofSeconds(30), "holder 'a'");
    keys.put(key("members/a"), "endpoint".getBytes(UTF_8));
    long first = keys.lease().id();
    try (Client raw = Client.builder().endpoints(etcd.endpoint()).build()) {
      raw.getLeaseClient().revoke(first).get(10, TimeUnit.SECONDS);
    }
    assertThat(other.kv().get(key("members/a")))
        .as("the registration ended with the lease")
        .isEmpty();
    assertThat(keys.state()).as("not noticed yet").isEqualTo(LeasedKeys.State.HELD);

    assertThat(keys.claim(key("locks/export"), "a".getBytes(UTF_8)))
        .as("a claim made on the dead lease")
        .isTrue();
    long renewed = keys.lease().id();
    assertThat(renewed).isNotEqualTo(first);
    assertThat(other.kv().get(key("locks/export")).orElseThrow().leaseId()).isEqualTo(renewed);
    assertThat(other.kv().get(key("members/a")).orElseThrow().leaseId())
        .as("the registration put back under the new lease")
        .isEqualTo(renewed);
    keys.put(key("members/a2"), "endpoint".getBytes(UTF_8));
    assertThat(other.kv().get(key("members/a2")).orElseThrow().leaseId()).isEqualTo(renewed);
    keys.close();
  }

  @Test
  void etcdGoneLongerThanTheRenewalTime_keysAreLost_listenersRun_andCallsNameTheHolder() {
    LeasedKeys keys =
        LeasedKeys.open(coordinator, Duration.ofSeconds(2), Duration.ofSeconds(3), "holder 'a'");
    keys.put(key("members/a"), "endpoint".getBytes(UTF_8));
    AtomicInteger lost = new AtomicInteger();
    keys.onLost(lost::incrementAndGet);

    etcd.server().terminate();
    // the listeners run on their own thread once the state is LOST: wait for both
    Poll.until(
        Duration.ofSeconds(20),
        () -> keys.state() == LeasedKeys.State.LOST && lost.get() > 0,
        "given up renewing, and told the listener");
    assertThat(lost.get()).as("the listener ran once").isEqualTo(1);
    assertThatThrownBy(() -> keys.claim(key("locks/export"), "a".getBytes(UTF_8)))
        .isInstanceOf(CoordinationException.class)
        .hasMessageContaining("holder 'a' lost its etcd lease for good")
        .hasMessageContaining("within PT3S");
    assertThat(keys.isHeld()).isFalse();
    keys.close();
  }
}
