package dev.paramserver.trainer.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Mlp;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.PserverEntry;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.rpc.Retry;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.trainer.pserver.ModelLayout;
import dev.paramserver.trainer.pserver.PserverDirectory;
import dev.paramserver.trainer.testing.InProcessChannels;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(20)
class ClusterMapRegistryTest {
  private static ClusterMap map(long revision, int desired, PserverEntry... entries) {
    return ClusterMap.newBuilder()
        .setRevision(revision)
        .setPserversDesired(desired)
        .addAllPservers(List.of(entries))
        .build();
  }

  private static PserverEntry ps(int index, String address, long epoch) {
    return PserverEntry.newBuilder().setIndex(index).setAddress(address).setEpoch(epoch).build();
  }

  @Test
  void eachMap_tellsTheListenersWhatChanged_inIndexOrder() throws Exception {
    ClusterMapRegistry registry = new ClusterMapRegistry();
    List<String> events = new ArrayList<>();
    registry.watch((i, a) -> events.add(i + "=" + a));

    registry.apply(map(5, 2, ps(1, "b:2", 7), ps(0, "a:1", 6)));
    registry.apply(map(6, 2, ps(0, "a:1", 6), ps(1, "b:2", 7))); // nothing new
    registry.apply(map(8, 2, ps(0, "a:1", 9))); // 0 restarted in place, 1 gone

    assertThat(events).containsExactly("0=a:1", "1=b:2", "0=a:1", "1=null");
    assertThat(registry.desired()).isEqualTo(2);
    assertThat(registry.addresses()).containsOnlyKeys(0);
    assertThat(registry.address(1)).isEmpty();
  }

  @Test
  void aMapOlderThanTheLatest_isIgnored() {
    ClusterMapRegistry registry = new ClusterMapRegistry();
    List<String> events = new ArrayList<>();
    registry.watch((i, a) -> events.add(i + "=" + a));
    assertThat(registry.apply(map(10, 1, ps(0, "new:1", 10)))).isTrue();
    assertThat(registry.apply(map(9, 1, ps(0, "old:1", 3)))).isFalse();
    assertThat(registry.address(0)).contains("new:1");
    assertThat(events).containsExactly("0=new:1");
  }

  @Test
  void directory_waitingForPservers_wakesOnTheMapThatCompletesThem() throws Exception {
    ClusterMapRegistry registry = new ClusterMapRegistry();
    try (PserverDirectory directory = new PserverDirectory(registry, new InProcessChannels())) {
      CompletableFuture<Integer> found =
          CompletableFuture.supplyAsync(
              () ->
                  directory.awaitAll(
                      Duration.ofSeconds(30),
                      new Retry(Duration.ofMillis(5), Duration.ofMillis(5), () -> false)));
      registry.apply(map(1, 2, ps(0, "a:1", 1)));
      assertThat(found).isNotDone();
      long start = System.nanoTime();
      registry.apply(map(2, 2, ps(0, "a:1", 1), ps(1, "b:2", 2)));
      assertThat(found.get(10, TimeUnit.SECONDS)).isEqualTo(2);
      // woken by the change, not by the 30 s look-again
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
      assertThat(directory.address(1)).isEqualTo("b:2");
    }
  }

  @Test
  void thePlacementAMapCarries_routesAFollowingLayout_andChangesReachTheWatchers() {
    ModelLayout layout =
        new ModelLayout(
            new Mlp("mlp", 64, 5, List.of(32), Mlp.Activation.TANH),
            100,
            OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).build(),
            2);
    PlacementMap grown = SlotMap.initial(layout.blocks(), 2).resized(3).toProto();
    SlotMove move = SlotMove.newBuilder().setEpoch(2).setFrom(0).setTo(2).addSlots(5).build();
    ClusterMapRegistry registry = new ClusterMapRegistry();
    List<Long> moves = new ArrayList<>();
    registry.watchPlacement(r -> moves.add(r.move().map(SlotMove::getEpoch).orElse(0L)));
    try (PserverDirectory directory = new PserverDirectory(registry, new InProcessChannels())) {
      directory.follow(layout);
      registry.apply(map(1, 2, ps(0, "a:1", 1), ps(1, "b:2", 2)));
      assertThat(layout.routing().epoch()).as("no map written: the initial one").isZero();

      registry.apply(map(2, 3).toBuilder().setPlacement(grown).setPlacementMove(move).build());
      assertThat(layout.routing().epoch()).isEqualTo(1);
      assertThat(layout.pservers()).isEqualTo(3);
      assertThat(registry.placement().move()).contains(move);

      registry.apply(map(3, 3).toBuilder().setPlacement(grown).build()); // the move rolled back
      assertThat(registry.placement().move()).isEmpty();
      assertThat(moves).containsExactly(0L, 2L, 0L);
    }
  }
}
