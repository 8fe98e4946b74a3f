package dev.paramserver.etcd;

import static org.assertj.core.api.Assertions.assertThat;

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
}
