package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.pserver.replication.harness.FaultyNetwork.Fault;
import dev.paramserver.pserver.sparse.EvictionPolicy;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Replica state equal after a takeover with capped sparse tables (issue 26, item 3): the table
 * holds 4 of the 6 row ids the trainers push, admits an id at its second push, and (ttl) expires
 * rows not updated for 10 s of a clock the test moves. The primary picks the rows it evicts at
 * random and expires rows by its clock; its backup removes exactly those (they travel with each
 * record), and the admission sketch travels in the copy. After pushes with a reordering network, a
 * move of the clock past the TTL and more pushes, the backup and then the backup that took over
 * hold the primary's rows, update counts, Adam moments and admission sketch bit for bit.
 */
@Timeout(90)
class CappedTableTakeoverTest {
  private static final long SECOND = 1_000_000_000L;

  @ParameterizedTest
  @ValueSource(strings = {"lfu", "ttl"})
  void backupThatTakesOver_holdsThePrimarysRowsCountsAndSketch(String policy) throws Exception {
    AtomicLong clock = new AtomicLong(1_000 * SECOND);
    SparseSettings sparse =
        new SparseSettings(
            4,
            Map.of(),
            null,
            policy.equals("ttl")
                ? EvictionPolicy.ttl(Duration.ofSeconds(10))
                : EvictionPolicy.lfu(Duration.ofSeconds(10)),
            2,
            2,
            64);
    Fault hold = new Fault(FaultyNetwork.Kind.HOLD, 30);
    Schedule schedule =
        new Schedule(3, 8, -1, 3, List.of(hold, hold, hold, hold, hold, hold), List.of(), 3, 26);
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = schedule.network();
    FaultyNetwork backupNetwork = FaultyNetwork.reliable();
    Duration timeout = Duration.ofSeconds(5);
    try (etcd;
        network;
        backupNetwork;
        InProcessPserver a =
            new InProcessPserver("ps-a", etcd, network, timeout, sparse, clock::get);
        InProcessPserver b =
            new InProcessPserver("ps-b", etcd, backupNetwork, timeout, sparse, clock::get)) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      b.registerAsBackup();
      awaitSynced(a, b);

      assertThat(Trainers.run(a.shard, schedule, 1, n -> {}).failures()).isEmpty();
      awaitSynced(a, b);
      // rows not updated since go past the TTL (ttl), or one LFU half-life passes (lfu)
      clock.addAndGet(11 * SECOND);
      assertThat(Trainers.run(a.shard, schedule, schedule.pushes() + 1, n -> {}).failures())
          .isEmpty();
      // The pushes so far may not have needed an eviction (an id gets a row at its second push):
      // one trainer alone then pushes on (bounded) until the table has made room. The table (4
      // rows, one stripe) never holds all 6 ids, since an insert always finds a row that is not
      // the push's own to evict, so an insert that needs room keeps coming.
      long step = 2L * schedule.pushes() + 1;
      for (int round = 0; round < 40 && a.shard.sparseTables().get(0).evictions() == 0; round++) {
        Schedule alone = new Schedule(1, 8, -1, 3, List.of(), List.of(), 3, 100 + round);
        assertThat(Trainers.run(a.shard, alone, step, n -> {}).failures()).isEmpty();
        step += alone.pushes();
      }
      awaitSynced(a, b);

      ShardState primary = ShardState.of(a.state());
      assertThat(a.shard.sparseTables())
          .as("the primary evicted or expired rows, and refused ids below the threshold")
          .singleElement()
          .satisfies(
              t -> {
                assertThat(t.evictions()).isPositive();
                assertThat(t.admissionsRefused()).isPositive();
              });
      assertThat(primary.sketches()).as("the admission sketch is in the copy").isNotEmpty();
      assertThat(ShardState.of(b.state()).differences(primary))
          .as("synced backup vs primary")
          .isEmpty();

      a.crash();
      Poll.until(Duration.ofSeconds(20), Duration.ofMillis(5), b::promoted, "ps-b took over");
      assertThat(ShardState.of(b.state()).differences(primary))
          .as("backup that took over vs the primary it replaced")
          .isEmpty();
    }
  }

  private static void awaitSynced(InProcessPserver from, InProcessPserver to) {
    Poll.until(
        Duration.ofSeconds(20),
        Duration.ofMillis(5),
        () -> from.replication.backupSynced() && to.shard.step() == from.shard.step(),
        to.name + " synced with " + from.name + " at step " + from.shard.step());
  }
}
