package dev.paramserver.serving.registration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.ServingReplicaRecord;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code serving/<id>} against a real etcd: written once the address is known, rewritten when the
 * record changes but at most once per interval however often it changes, not rewritten when it does
 * not, held under a lease, and gone as soon as the registration stops.
 */
@Timeout(120)
class ReplicaRegistrationTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static ServingReplicaRecord record(String address, long version) {
    return new ServingReplicaRecord(
        address, "127.0.0.1:8084", "SERVING", "FOLLOWING", version, List.of(version, 3L), 12, 2);
  }

  @Test
  void registration_writesTheRecordAtABoundedRate_andVanishesAtStop() throws Exception {
    try (EtcdCoordinator c =
        EtcdCoordinator.connect(
            // a generous call timeout: the machine running the tests may be loaded
            new EtcdSettings(
                List.of(etcd.endpoint()),
                etcd.uniqueJob(),
                Duration.ofSeconds(30),
                null,
                null,
                null))) {
      String key = c.keys().serving("r1");
      AtomicLong version = new AtomicLong(1);
      AtomicInteger builds = new AtomicInteger();
      java.util.concurrent.atomic.AtomicBoolean changing =
          new java.util.concurrent.atomic.AtomicBoolean();
      ReplicaRegistration reg =
          new ReplicaRegistration(
              c,
              key,
              "127.0.0.1",
              address -> {
                builds.incrementAndGet();
                // while "changing", every build differs: as a replica applying many records
                return record(address, changing.get() ? version.incrementAndGet() : version.get());
              },
              Duration.ofMillis(200),
              Duration.ofSeconds(5));
      reg.start();
      assertThat(c.kv().get(key)).as("nothing before the gRPC server listens").isEmpty();
      reg.registerAt("127.0.0.1:9094");
      Poll.until(Duration.ofSeconds(10), () -> c.kv().get(key).isPresent(), "the registration");
      KeyValueStore.KeyValue first = c.kv().get(key).orElseThrow();
      assertThat(c.kv().getPrefix(c.keys().servingPrefix())).hasSize(1);
      assertThat(ServingReplicaRecord.decode(first.value())).isEqualTo(record("127.0.0.1:9094", 1));
      assertThat(first.leaseId()).as("held under a lease").isNotZero();

      // unchanged: rebuilt at every tick, never rewritten
      int before = builds.get();
      Poll.until(Duration.ofSeconds(10), () -> builds.get() >= before + 3, "three more ticks");
      assertThat(c.kv().get(key).orElseThrow().modRevision()).isEqualTo(first.modRevision());

      // changing at every build: one write per tick, no more
      AtomicInteger puts = new AtomicInteger();
      try (AutoCloseable watch =
          c.kv()
              .watchPrefix(
                  key,
                  e -> {
                    if (e.type() == KeyValueStore.WatchEvent.Type.PUT) {
                      puts.incrementAndGet();
                    }
                  })) {
        int ticksBefore = builds.get();
        changing.set(true);
        Poll.until(Duration.ofSeconds(10), () -> builds.get() >= ticksBefore + 5, "five ticks");
        changing.set(false);
        long last = version.get();
        Poll.until(
            Duration.ofSeconds(10),
            () ->
                c.kv()
                    .get(key)
                    .map(kv -> ServingReplicaRecord.decode(kv.value()).version() == last)
                    .orElse(false),
            "the last version registered");
        int ticks = builds.get() - ticksBefore;
        assertThat(puts.get()).isBetween(1, ticks + 1);
      }

      reg.stop();
      Optional<KeyValueStore.KeyValue> gone = c.kv().get(key);
      assertThat(gone).as("revoked at stop, not after the TTL").isEmpty();
      assertThat(reg.isRunning()).isFalse();
    }
  }

  @Test
  void record_readsBackWhatItWrote_andIgnoresKeysItDoesNotKnow() {
    ServingReplicaRecord r = record("h:1", 7);
    assertThat(ServingReplicaRecord.decode(r.encode())).isEqualTo(r);
    byte[] newer =
        (new String(r.encode(), java.nio.charset.StandardCharsets.UTF_8) + "zone=a\n")
            .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(ServingReplicaRecord.decode(newer)).isEqualTo(r);
    ServingReplicaRecord loading =
        new ServingReplicaRecord("h:1", "", "LOADING", "FOLLOWING", 0, List.of(), 0, 0);
    assertThat(ServingReplicaRecord.decode(loading.encode())).isEqualTo(loading);
  }
}
