package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.LeaderElection.Leadership;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class LeaderElectionTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator a;
  private EtcdCoordinator b;
  private String job;

  @BeforeEach
  void connect() {
    job = etcd.uniqueJob();
    a = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
    b = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
  }

  @AfterEach
  void close() {
    a.close();
    b.close();
  }

  @Test
  void twoCandidates_oneLeads_otherTakesOverWhenLeaderLeaseIsRevoked() throws Exception {
    String key = a.keys().masterElection();
    Lease leaseA = a.grantLease(Duration.ofSeconds(10));
    Lease leaseB = b.grantLease(Duration.ofSeconds(10));
    Leadership first =
        a.election(key).campaign("A".getBytes(UTF_8), leaseA, Duration.ofSeconds(5)).orElseThrow();
    assertThat(first.isStillLeader()).isTrue();
    assertThat(b.election(key).leader())
        .hasValueSatisfying(v -> assertThat(v).isEqualTo("A".getBytes(UTF_8)));

    CompletableFuture<Optional<Leadership>> second =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return b.election(key)
                    .campaign("B".getBytes(UTF_8), leaseB, Duration.ofSeconds(15));
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
              }
            });
    Poll.until(
        Duration.ofSeconds(5),
        () -> a.kv().getPrefix(key + "/").size() == 2,
        "B's candidate key to appear");
    assertThat(second).isNotDone();

    leaseA.revoke();

    Leadership taken = second.get(10, TimeUnit.SECONDS).orElseThrow();
    assertThat(taken.isStillLeader()).isTrue();
    assertThat(first.isStillLeader()).isFalse();
    assertThat(a.election(key).leader())
        .hasValueSatisfying(v -> assertThat(v).isEqualTo("B".getBytes(UTF_8)));

    String state = a.keys().masterState();
    assertThat(
            a.kv()
                .commitIfHeld(
                    first.key(), first.createRevision(), Map.of(state, new byte[] {1}), List.of()))
        .isFalse();
    assertThat(
            b.kv()
                .commitIfHeld(
                    taken.key(), taken.createRevision(), Map.of(state, new byte[] {2}), List.of()))
        .isTrue();
    assertThat(a.kv().get(state).orElseThrow().value()).containsExactly(2);

    taken.resign();
    taken.resign();
    assertThat(taken.isStillLeader()).isFalse();
    assertThat(a.election(key).leader()).isEmpty();
  }

  @Test
  void campaign_timesOut_returnsEmptyAndWithdrawsCandidate() throws Exception {
    String key = a.keys().masterElection();
    Lease leaseA = a.grantLease(Duration.ofSeconds(10));
    Lease leaseB = b.grantLease(Duration.ofSeconds(10));
    Leadership leader =
        a.election(key).campaign("A".getBytes(UTF_8), leaseA, Duration.ofSeconds(5)).orElseThrow();

    long start = System.nanoTime();
    Optional<Leadership> lost =
        b.election(key).campaign("B".getBytes(UTF_8), leaseB, Duration.ofMillis(500));
    long tookMillis = (System.nanoTime() - start) / 1_000_000;

    assertThat(lost).isEmpty();
    assertThat(tookMillis).isLessThan(3000);
    assertThat(a.kv().getPrefix(key + "/"))
        .extracting(KeyValueStore.KeyValue::key)
        .containsExactly(leader.key());
  }

  @Test
  void fencing_oldLeaderCommitFailsAfterItsLeaseExpired() throws Exception {
    String key = a.keys().masterElection();
    try (RawLeases raw = new RawLeases(etcd.endpoint())) {
      Lease dying = raw.unkept(2); // like a leader whose process froze
      Leadership old =
          a.election(key)
              .campaign("old".getBytes(UTF_8), dying, Duration.ofSeconds(5))
              .orElseThrow();
      Lease leaseB = b.grantLease(Duration.ofSeconds(10));
      Leadership next =
          b.election(key)
              .campaign("new".getBytes(UTF_8), leaseB, Duration.ofSeconds(10))
              .orElseThrow();

      String state = a.keys().masterState();
      assertThat(
              a.kv()
                  .commitIfHeld(
                      old.key(), old.createRevision(), Map.of(state, new byte[] {9}), List.of()))
          .isFalse();
      assertThat(a.kv().get(state)).isEmpty();
      assertThat(old.isStillLeader()).isFalse();
      assertThat(next.isStillLeader()).isTrue();
    }
  }

  @Test
  void campaign_withRevokedLease_failsClearly() {
    Lease lease = a.grantLease(Duration.ofSeconds(5));
    lease.revoke();
    assertThatThrownBy(
            () ->
                a.election(a.keys().masterElection())
                    .campaign(new byte[0], lease, Duration.ofSeconds(1)))
        .isInstanceOf(CoordinationException.class)
        .hasMessageContaining("revoked or lost");
  }
}
