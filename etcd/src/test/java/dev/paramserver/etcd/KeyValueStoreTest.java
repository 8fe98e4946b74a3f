package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.KeyValueStore.WatchEvent;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class KeyValueStoreTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private KeyValueStore kv;
  private String p;

  @BeforeEach
  void connect() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    kv = coordinator.kv();
    p = coordinator.keys().prefix();
  }

  @AfterEach
  void close() {
    coordinator.close();
  }

  @Test
  void getPrefixes_readsEveryPrefixAtTheStoresRevision_andDeleteIfCreatedAtIsFenced() {
    kv.put(p + "ps/1", "b".getBytes(UTF_8));
    kv.put(p + "ps/0", "a".getBytes(UTF_8));
    kv.put(p + "ps_desired", "2".getBytes(UTF_8));
    long last = kv.put(p + "unrelated", "x".getBytes(UTF_8));

    KeyValueStore.PrefixesRead read =
        kv.getPrefixes(List.of(p + "ps/", p + "ps_desired", p + "trainers/"));
    assertThat(read.revision()).isEqualTo(last);
    assertThat(read.under(p + "ps/").stream().map(KeyValueStore.KeyValue::valueAsString))
        .containsExactly("a", "b");
    assertThat(read.under(p + "ps_desired")).hasSize(1);
    assertThat(read.under(p + "trainers/")).isEmpty();

    long created = kv.get(p + "ps/0").orElseThrow().createRevision();
    assertThat(kv.deleteIfCreatedAt(p + "ps/0", created + 1000)).isFalse();
    assertThat(kv.deleteIfCreatedAt(p + "ps/0", created)).isTrue();
    assertThat(kv.get(p + "ps/0")).isEmpty();
  }

  @Test
  void putGetAndPrefix_returnValuesInKeyOrder() {
    long rev = kv.put(p + "b", "2".getBytes(UTF_8));
    kv.put(p + "a", "1".getBytes(UTF_8));
    kv.put(p + "other/c", "3".getBytes(UTF_8));

    assertThat(kv.get(p + "b")).hasValueSatisfying(k -> assertThat(k.modRevision()).isEqualTo(rev));
    assertThat(kv.get(p + "b").orElseThrow().valueAsString()).isEqualTo("2");
    assertThat(kv.get(p + "missing")).isEmpty();
    assertThat(kv.getPrefix(p).stream().map(KeyValueStore.KeyValue::key))
        .containsExactly(p + "a", p + "b", p + "other/c");

    kv.delete(p + "a");
    assertThat(kv.get(p + "a")).isEmpty();
    assertThat(coordinator.isConnected()).isTrue();
  }

  @Test
  void putIfAbsent_race_exactlyOneWins() throws Exception {
    try (Lease lease = coordinator.grantLease(Duration.ofSeconds(10))) {
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        CountDownLatch go = new CountDownLatch(1);
        List<Callable<Boolean>> racers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
          byte[] v = ("racer" + i).getBytes(UTF_8);
          racers.add(
              () -> {
                go.await();
                return kv.putIfAbsent(p + "lock", v, lease);
              });
        }
        List<Future<Boolean>> results = new ArrayList<>();
        racers.forEach(r -> results.add(pool.submit(r)));
        go.countDown();
        int wins = 0;
        for (Future<Boolean> f : results) {
          wins += f.get() ? 1 : 0;
        }
        assertThat(wins).isEqualTo(1);
        assertThat(kv.get(p + "lock").orElseThrow().leaseId()).isEqualTo(lease.id());
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void compareAndSwap_succeedsOnlyAtTheExpectedRevision() {
    assertThat(kv.compareAndSwap(p + "cas", 0, "v1".getBytes(UTF_8))).isTrue();
    assertThat(kv.compareAndSwap(p + "cas", 0, "again".getBytes(UTF_8))).isFalse();
    long rev = kv.get(p + "cas").orElseThrow().modRevision();
    assertThat(kv.compareAndSwap(p + "cas", rev, "v2".getBytes(UTF_8))).isTrue();
    assertThat(kv.compareAndSwap(p + "cas", rev, "stale".getBytes(UTF_8))).isFalse();
    assertThat(kv.get(p + "cas").orElseThrow().valueAsString()).isEqualTo("v2");
  }

  @Test
  void commitIfHeld_appliesWhileFenceExists_andFailsOnceItIsGone() {
    long fenceRev = kv.put(p + "fence", new byte[0]);
    kv.put(p + "old", "x".getBytes(UTF_8));

    assertThat(
            kv.commitIfHeld(
                p + "fence", fenceRev, Map.of(p + "s1", "a".getBytes(UTF_8)), List.of(p + "old")))
        .isTrue();
    assertThat(kv.get(p + "s1")).isPresent();
    assertThat(kv.get(p + "old")).isEmpty();

    kv.delete(p + "fence");
    assertThat(kv.commitIfHeld(p + "fence", fenceRev, Map.of(p + "s2", new byte[0]), List.of()))
        .isFalse();
    assertThat(kv.get(p + "s2")).isEmpty();

    long newRev = kv.put(p + "fence", new byte[0]); // re-created: a different holder
    assertThat(newRev).isNotEqualTo(fenceRev);
    assertThat(kv.commitIfHeld(p + "fence", fenceRev, Map.of(p + "s3", new byte[0]), List.of()))
        .isFalse();
  }

  @Test
  void leaseKeys_vanishAfterRevoke_withoutFiringOnLost() {
    Lease lease = coordinator.grantLease(Duration.ofSeconds(10));
    List<String> lost = new CopyOnWriteArrayList<>();
    lease.onLost(() -> lost.add("lost"));
    kv.put(p + "ephemeral", "x".getBytes(UTF_8), lease);
    assertThat(kv.get(p + "ephemeral").orElseThrow().leaseId()).isEqualTo(lease.id());

    lease.revoke();
    lease.revoke(); // idempotent

    assertThat(kv.get(p + "ephemeral")).isEmpty();
    assertThat(lease.isAlive()).isFalse();
    assertThat(lost).isEmpty();
  }

  @Test
  void lease_revokedBehindItsBack_isDetectedAndFiresOnLostOnce() throws Exception {
    Lease lease = coordinator.grantLease(Duration.ofSeconds(3));
    List<String> lost = Collections.synchronizedList(new ArrayList<>());
    lease.onLost(() -> lost.add(Thread.currentThread().getName()));
    try (RawLeases raw = new RawLeases(etcd.endpoint())) {
      raw.revokeBehindTheBack(lease.id());
    }
    Poll.until(Duration.ofSeconds(5), () -> !lost.isEmpty(), "onLost after external revoke");
    assertThat(lease.isAlive()).isFalse();
    assertThat(lost).hasSize(1);
    assertThat(lost.get(0)).isNotEqualTo(Thread.currentThread().getName());
    // a listener added after the loss still runs, once
    CountDownLatch late = new CountDownLatch(1);
    lease.onLost(late::countDown);
    assertThat(late.await(5, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void watchPrefix_seesPutAndDelete_untilClosed() throws Exception {
    List<WatchEvent> seen = new CopyOnWriteArrayList<>();
    AutoCloseable watch = kv.watchPrefix(p + "w/", seen::add);
    kv.put(p + "w/a", "1".getBytes(UTF_8));
    kv.put(p + "outside", "x".getBytes(UTF_8));
    kv.delete(p + "w/a");
    Poll.until(Duration.ofSeconds(5), () -> seen.size() >= 2, "put and delete events");
    assertThat(seen)
        .extracting(WatchEvent::type)
        .containsExactly(WatchEvent.Type.PUT, WatchEvent.Type.DELETE);
    assertThat(seen.get(0).keyValue().key()).isEqualTo(p + "w/a");
    assertThat(seen.get(0).keyValue().valueAsString()).isEqualTo("1");

    watch.close();
    List<WatchEvent> second = new CopyOnWriteArrayList<>();
    try (AutoCloseable w2 = kv.watchPrefix(p + "w/", second::add)) {
      kv.put(p + "w/b", "2".getBytes(UTF_8));
      Poll.until(Duration.ofSeconds(5), () -> !second.isEmpty(), "event on a second watch");
    }
    assertThat(seen).hasSize(2);
  }
}
