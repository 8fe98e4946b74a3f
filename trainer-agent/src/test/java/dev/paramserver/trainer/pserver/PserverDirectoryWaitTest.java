package dev.paramserver.trainer.pserver;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.coordination.EtcdPserverRegistry;
import dev.paramserver.trainer.stop.StopSignal;
import dev.paramserver.trainer.testing.InProcessChannels;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A trainer waiting for its pservers sees a registration as it happens, not a poll later. */
@Timeout(60)
class PserverDirectoryWaitTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private PserverDirectory directory;
  private final StopSignal stop = new StopSignal();

  @BeforeEach
  void start() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    directory = new PserverDirectory(new EtcdPserverRegistry(coordinator), new InProcessChannels());
  }

  @AfterEach
  void stop() {
    stop.request();
    directory.close();
    coordinator.close();
  }

  @Test
  void awaitAll_returnsSoonAfterTheLastRegistration_evenWithALongFallbackPoll() throws Exception {
    // the first look finds nothing; the next read by the fallback would come 30 s later
    CompletableFuture<Integer> found =
        CompletableFuture.supplyAsync(
            () ->
                directory.awaitAll(
                    Duration.ofSeconds(30),
                    stop.retry(Duration.ofMillis(5), Duration.ofMillis(5))));
    Thread.sleep(300);
    assertThat(found).isNotDone();

    coordinator.kv().put(coordinator.keys().psDesired(), "1".getBytes(UTF_8));
    coordinator.kv().put(coordinator.keys().ps(0), "127.0.0.1:1".getBytes(UTF_8));

    assertThat(found.get(10, TimeUnit.SECONDS)).isEqualTo(1);
    assertThat(directory.address(0)).isEqualTo("127.0.0.1:1");
  }

  @Test
  void awaitAll_withACommittedMap_waitsForTheIndexesOwningSomething_only() throws Exception {
    coordinator.kv().put(coordinator.keys().psDesired(), "3".getBytes(UTF_8));
    // a map of 3 indexes where 1 owns nothing (being drained, or not filled yet)
    PlacementMap map =
        PlacementMap.newBuilder()
            .setEpoch(4)
            .setPservers(3)
            .setSlots(4)
            .addAllSlotOwners(List.of(0, 2, 0, 2))
            .build();
    PlacementStore store = new PlacementStore(coordinator);
    SlotMove move = SlotMove.newBuilder().setEpoch(4).setFrom(1).setTo(2).build();
    assertThat(store.begin(store.read(), move)).isTrue();
    assertThat(store.commit(store.read(), map)).isTrue();
    coordinator.kv().put(coordinator.keys().ps(0), "127.0.0.1:1".getBytes(UTF_8));

    CompletableFuture<Integer> found =
        CompletableFuture.supplyAsync(
            () ->
                directory.awaitAll(
                    Duration.ofSeconds(30),
                    stop.retry(Duration.ofMillis(5), Duration.ofMillis(5))));
    Thread.sleep(300);
    assertThat(found).as("index 2 owns slots and is not registered").isNotDone();

    coordinator.kv().put(coordinator.keys().ps(2), "127.0.0.1:3".getBytes(UTF_8));
    assertThat(found.get(10, TimeUnit.SECONDS)).as("the map's count").isEqualTo(3);
    assertThat(directory.address(1)).isNull();
  }
}
