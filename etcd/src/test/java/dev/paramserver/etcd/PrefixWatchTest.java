package dev.paramserver.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class PrefixWatchTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;

  @BeforeEach
  void connect() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
  }

  @AfterEach
  void close() {
    coordinator.close();
  }

  @Test
  void watchFromACompactedRevision_restartsFromNow_tellsOfTheGap_andKeepsDelivering()
      throws Exception {
    String prefix = coordinator.keys().prefix();
    long first = coordinator.kv().put(prefix + "k", "1".getBytes(UTF_8));
    long second = coordinator.kv().put(prefix + "k", "2".getBytes(UTF_8));
    try (Client raw = Client.builder().endpoints(etcd.endpoint()).build()) {
      raw.getKVClient().compact(second).get(5, TimeUnit.SECONDS);
    }

    List<KeyValueStore.WatchEvent> seen = new CopyOnWriteArrayList<>();
    EtcdKeyValueStore kv = (EtcdKeyValueStore) coordinator.kv();
    AtomicInteger gaps = new AtomicInteger();
    try (PrefixWatch watch = kv.watchPrefixFrom(prefix, first, seen::add, gaps::incrementAndGet)) {
      // the watch is cancelled as compacted and reopened from the current revision
      Poll.until(
          Duration.ofSeconds(10),
          Duration.ofMillis(200),
          () -> {
            coordinator.kv().put(prefix + "k", "after".getBytes(UTF_8));
            return seen.stream().anyMatch(e -> e.keyValue().valueAsString().equals("after"));
          },
          "events after the compaction");
    }
    assertThat(seen).noneMatch(e -> e.keyValue().valueAsString().equals("1"));
    assertThat(gaps.get()).as("the listener told that events were lost").isEqualTo(1);
  }
}
