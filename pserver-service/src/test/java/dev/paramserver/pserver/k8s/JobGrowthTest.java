package dev.paramserver.pserver.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.adminapi.AdminException;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.testsupport.EtcdExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A pserver whose index is at or above ps_desired grows the job: against a real etcd and a stand-in
 * master ({@link FakeMaster}: a gRPC GetStatus and the admin HTTP endpoints), found through etcd by
 * the real {@link LeaderMaster}.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class JobGrowthTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private FakeMaster master;
  private LeaderMaster leader;

  @BeforeEach
  void setUp() throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    master = new FakeMaster(coordinator);
    leader =
        new LeaderMaster(
            coordinator, ChannelFactory.plaintext(), FakeMaster.TOKEN, Duration.ofSeconds(5));
  }

  @AfterEach
  void tearDown() {
    master.close();
    coordinator.close();
  }

  private JobGrowth growth(int index, Duration timeout) {
    return new JobGrowth(coordinator, leader, index, timeout, Duration.ofMillis(100));
  }

  @Test
  void indexAtOrAboveDesired_asksTheLeaderToGrowToIndexPlusOne() {
    master.lead().setDesired(2);

    assertThat(growth(3, Duration.ofSeconds(10)).growJob()).isTrue();

    assertThat(master.calls).containsExactly("POST /admin/job/scale?pservers=4&grow-only=true");
    assertThat(master.desired()).isEqualTo(4);
  }

  @Test
  void indexBelowDesired_asksNothing() {
    master.lead().setDesired(2);

    assertThat(growth(1, Duration.ofSeconds(10)).growJob()).isTrue();

    assertThat(master.calls).isEmpty();
    assertThat(master.desired()).isEqualTo(2);
  }

  @Test
  void aRefusal_isRetriedUntilTheMasterTakesIt() {
    master.lead().setDesired(2);
    master.refusals.set(2);

    assertThat(growth(2, Duration.ofSeconds(10)).growJob()).isTrue();

    assertThat(master.calls).hasSize(3).allMatch(c -> c.endsWith("pservers=3&grow-only=true"));
    assertThat(master.desired()).isEqualTo(3);
  }

  @Test
  void noLeaderYet_noDesiredYet_waitsForBoth() throws Exception {
    JobGrowth growth = growth(1, Duration.ofSeconds(20));
    CompletableFuture<Boolean> grown = CompletableFuture.supplyAsync(growth::growJob);
    Thread.sleep(500);
    master.setDesired(1); // what the first pserver's registration writes
    Thread.sleep(500);
    assertThat(grown).isNotDone();
    master.lead();

    assertThat(grown.get(15, TimeUnit.SECONDS)).isTrue();
    assertThat(master.desired()).isEqualTo(2);
  }

  @Test
  void aMasterThatNeverTakesIt_isGivenUpAfterTheTimeout() {
    master.lead().setDesired(1);
    master.refusals.set(Integer.MAX_VALUE);

    long start = System.nanoTime();
    assertThat(growth(1, Duration.ofSeconds(1)).growJob()).isFalse();

    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(master.calls).isNotEmpty();
    assertThat(master.desired()).isEqualTo(1);
  }

  @Test
  void aWrongToken_isReportedAndRetriedWithinTheBound() {
    master.lead().setDesired(1);
    LeaderMaster wrong =
        new LeaderMaster(coordinator, ChannelFactory.plaintext(), "nope", Duration.ofSeconds(5));

    assertThat(
            new JobGrowth(coordinator, wrong, 1, Duration.ofMillis(600), Duration.ofMillis(100))
                .growJob())
        .isFalse();
    assertThat(master.desired()).isEqualTo(1);
  }

  /** Writes the committed placement: slot s is owned by {@code owners[s]}. */
  private void placed(long epoch, int... owners) {
    PlacementMap.Builder m =
        PlacementMap.newBuilder()
            .setEpoch(epoch)
            .setPservers(Arrays.stream(owners).max().orElseThrow() + 1)
            .setSlots(owners.length);
    Arrays.stream(owners).forEach(m::addSlotOwners);
    coordinator.kv().put(coordinator.keys().placement(), m.build().toByteArray());
  }

  private void moving(long epoch, int from, int to) {
    SlotMove move =
        SlotMove.newBuilder()
            .setEpoch(epoch)
            .setFrom(from)
            .setTo(to)
            .addSlots(3)
            .setId("e" + epoch + "-" + from + "to" + to)
            .build();
    coordinator.kv().put(coordinator.keys().placementMove(), move.toByteArray());
  }

  @Test
  void midShrink_aMoveOutOfTheIndexInProgress_asksNothing() {
    master.lead().setDesired(2); // psctl scale 2, or the StatefulSet's preStop hook, from 4
    placed(5, 0, 1, 2, 3);
    moving(6, 3, 1);

    assertThat(growth(3, Duration.ofSeconds(1)).growJob()).as("still waiting").isFalse();

    assertThat(master.calls).isEmpty();
    assertThat(master.desired()).isEqualTo(2);
  }

  @Test
  void midShrink_theIndexNoLongerPlaced_asksNothingWhileAnotherIsMovedAway() {
    master.lead().setDesired(2);
    placed(7, 0, 1, 2, 0); // index 3 emptied, index 2 not yet

    assertThat(growth(3, Duration.ofSeconds(1)).growJob()).isFalse();

    assertThat(master.calls).isEmpty();
    assertThat(master.desired()).isEqualTo(2);
  }

  @Test
  void anIndexAShrinkEmptied_asksNothingUntilTheMasterForgetsItsCheckpointKey() {
    master.lead().setDesired(3);
    placed(7, 0, 1, 2, 0); // the shrink from 4 moved everything: pserver 3 drains
    String checkpoint = coordinator.keys().checkpoint(3);
    coordinator.kv().put(checkpoint, "ckpt-3".getBytes(StandardCharsets.UTF_8));

    assertThat(growth(3, Duration.ofSeconds(1)).growJob()).isFalse();
    assertThat(master.calls).isEmpty();

    coordinator.kv().delete(checkpoint); // the master shut pserver 3 down
    assertThat(growth(3, Duration.ofSeconds(10)).growJob())
        .as("a StatefulSet still asking for 4 grows the job back")
        .isTrue();
    assertThat(master.calls).containsExactly("POST /admin/job/scale?pservers=4&grow-only=true");
  }

  @Test
  void afterAShrink_aNewIndexAtOrAboveDesired_growsTheJob() {
    master.lead().setDesired(2);
    placed(9, 0, 1, 0, 1); // a shrink from 4 to 2, over; then the StatefulSet is scaled to 3

    assertThat(growth(2, Duration.ofSeconds(10)).growJob()).isTrue();

    assertThat(master.calls).containsExactly("POST /admin/job/scale?pservers=3&grow-only=true");
    assertThat(master.desired()).isEqualTo(3);
  }

  @Test
  void aNewLeader_isFoundAgainAfterTheOldOneStoppedAnswering() throws Exception {
    master.lead().setDesired(2);
    assertThat(leader.scaling().get("desired").asInt()).isEqualTo(2);
    master.close();
    try (FakeMaster next = new FakeMaster(coordinator)) {
      next.lead();
      assertThatThrownBy(leader::scaling)
          .isInstanceOf(AdminException.class)
          .hasMessageContaining("the leader master at")
          .satisfies(
              e ->
                  assertThat(((AdminException) e).kind())
                      .isEqualTo(AdminException.Kind.UNREACHABLE));
      assertThat(leader.scaling().get("desired").asInt()).isEqualTo(2);
      leader.growTo(3);
      assertThat(next.calls).contains("POST /admin/job/scale?pservers=3&grow-only=true");
    }
  }
}
