package dev.paramserver.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.BlockOwner;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class PlacementStoreTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private PlacementStore store;

  @BeforeEach
  void connect() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    store = new PlacementStore(coordinator);
  }

  @AfterEach
  void close() {
    coordinator.close();
  }

  @Test
  void aMoveIsBegunThenCommittedOnlyByTheWriterThatSawTheLatestState() throws Exception {
    List<PlacementStore.Read> seen = new CopyOnWriteArrayList<>();
    try (AutoCloseable w = store.watch(seen::add)) {
      SlotMap initial = SlotMap.initial(List.of(), 2);
      PlacementStore.Read empty = store.read();
      assertThat(empty.epoch()).isZero();
      assertThat(empty.slotMap(initial)).isSameAs(initial);

      SlotMap target = initial.resized(3);
      SlotMove move =
          initial.movesTo(target, 100_000).get(0).toBuilder().setEpoch(1).setId("m1").build();
      assertThat(store.begin(empty, move)).isTrue();
      // a second coordinator that read before the first began loses
      assertThat(store.begin(empty, move.toBuilder().setId("m2").build())).isFalse();

      PlacementStore.Read moving = store.read();
      assertThat(moving.move()).contains(move);
      assertThat(store.begin(moving, move)).isFalse();
      PlacementMap next = initial.with(move).toProto();
      assertThat(
              store.commit(
                  new PlacementStore.Read(empty.map(), empty.mapRevision(), Optional.of(move), 0),
                  next))
          .isFalse();
      assertThat(store.commit(moving, next)).isTrue();

      PlacementStore.Read committed = store.read();
      assertThat(committed.epoch()).isEqualTo(1);
      assertThat(committed.move()).isEmpty();
      assertThat(committed.slotMap(initial).pservers()).isEqualTo(3);
      // a stale abort changes nothing
      assertThat(store.abort(moving)).isFalse();
      assertThat(store.read().epoch()).isEqualTo(1);

      Poll.until(
          Duration.ofSeconds(10),
          () -> seen.stream().anyMatch(r -> r.epoch() == 1),
          "the watch to see epoch 1");
      assertThat(seen).anyMatch(r -> r.move().isPresent());
    }
  }

  @Test
  void anAbortDeletesOnlyTheMove() {
    SlotMap initial = SlotMap.initial(List.of(), 2);
    PlacementStore.Read empty = store.read();
    SlotMove move =
        SlotMove.newBuilder().setEpoch(1).setFrom(0).setTo(2).addSlots(4).setId("m").build();
    assertThat(store.begin(empty, move)).isTrue();
    assertThat(store.abort(store.read())).isTrue();
    PlacementStore.Read after = store.read();
    assertThat(after.move()).isEmpty();
    assertThat(after.map()).isEmpty();
    assertThat(after.slotMap(initial)).isSameAs(initial);
  }

  @Test
  void placesAnIndexWithSlotsBlocksOrTheMoveInProgress_evenAboveTheCount() {
    SlotMap three = SlotMap.initial(List.of(), 3);
    SlotMap two = three.resized(2);
    PlacementStore.Read none = new PlacementStore.Read(Optional.empty(), 0, Optional.empty(), 0);
    assertThat(none.places(0)).as("no map written: the initial map of ps_desired").isFalse();

    PlacementStore.Read midShrink =
        new PlacementStore.Read(Optional.of(three.toProto()), 1, Optional.empty(), 0);
    assertThat(midShrink.places(2)).isTrue();
    assertThat(midShrink.places(3)).isFalse();
    assertThat(midShrink.places(-1)).isFalse();

    PlacementStore.Read shrunk =
        new PlacementStore.Read(Optional.of(two.toProto()), 1, Optional.empty(), 0);
    assertThat(shrunk.places(2)).isFalse();
    SlotMove moving = SlotMove.newBuilder().setEpoch(2).setFrom(1).setTo(2).addSlots(0).build();
    PlacementStore.Read growing =
        new PlacementStore.Read(Optional.of(two.toProto()), 1, Optional.of(moving), 2);
    assertThat(growing.places(2)).as("the move's target").isTrue();

    PlacementMap blocksOnly =
        two.toProto().toBuilder()
            .addDenseOwners(BlockOwner.newBuilder().setName("w").setBlock(0).setOwner(4))
            .build();
    assertThat(new PlacementStore.Read(Optional.of(blocksOnly), 1, Optional.empty(), 0).places(4))
        .as("an index owning only a dense block")
        .isTrue();
  }
}
