package dev.paramserver.master.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.PserverEntry;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Attend on a real leader master against a real etcd: the membership in {@code trainers/<id>}, its
 * end (stream closed at once, heartbeats stopped after the TTL) and the cluster map.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class CoordinationAttendTest {
  @RegisterExtension static final EtcdExtension etcdServer = new EtcdExtension();
  private final ScheduledExecutorService heart = Executors.newSingleThreadScheduledExecutor();
  private CoordinationMaster master;
  private ConfigurableApplicationContext leader;

  @BeforeEach
  void start() {
    master = new CoordinationMaster(etcdServer);
    leader = master.startLeader();
    master
        .stub(leader)
        .join(
            JoinRequest.newBuilder()
                .setTrainerId("t1")
                .setSession("s1")
                .addAllParameters(Models.mlp())
                .build());
  }

  @AfterEach
  void stop() {
    heart.shutdownNow();
    master.close();
  }

  private String trainerKey() {
    return master.etcd.keys().trainer("t1");
  }

  private boolean registered() {
    return master.get(trainerKey()).isPresent();
  }

  @Test
  void attend_registersTheTrainer_keepsItPastTwoTtlsWithHeartbeats_andCancelRemovesItAtOnce()
      throws Exception {
    CoordinationMaster.Attendance a = master.attend(leader, "t1", "s1");
    heart.scheduleAtFixedRate(a::beat, 0, 600, TimeUnit.MILLISECONDS);
    Poll.until(Duration.ofSeconds(10), this::registered, "trainers/t1 to be put");
    assertThat(master.get(trainerKey()).orElseThrow().valueAsString())
        .as("no endpoint: the peer's host, port 0")
        .isEqualTo("127.0.0.1:0");
    assertThat(master.get(master.etcd.keys().trainerSession("t1")).orElseThrow().valueAsString())
        .isEqualTo("s1");
    assertThat(leader.getBean(CoordinatedTrainers.class).coordinatedTrainers()).isEqualTo(1);

    long until = System.nanoTime() + 2 * CoordinationMaster.TTL.toNanos() + 500_000_000L;
    while (System.nanoTime() < until) {
      assertThat(registered()).as("registered while heartbeats come").isTrue();
      assertThat(a.ended).isNotDone();
      Thread.sleep(100); // sampling the key while time passes, not waiting for a condition
    }

    heart.shutdownNow();
    long cancelled = System.nanoTime();
    a.cancel();
    Poll.until(Duration.ofSeconds(5), () -> !registered(), "trainers/t1 to go");
    assertThat(Duration.ofNanos(System.nanoTime() - cancelled))
        .as("gone at once, not after the TTL")
        .isLessThan(CoordinationMaster.TTL);
    Poll.until(
        Duration.ofSeconds(5),
        () -> leader.getBean(CoordinatedTrainers.class).coordinatedTrainers() == 0,
        "the membership to end");
  }

  @Test
  void attend_heartbeatsStopped_endsTheMembershipAfterAboutTheTtl() throws Exception {
    // The master starts the silence clock when it takes the stream, between these two marks. A
    // loaded machine may delay the first map by seconds, so each bound is measured from the mark
    // that keeps it sound: not gone before the TTL from the earliest, gone soon after the latest.
    long beforeAttend = System.nanoTime();
    CoordinationMaster.Attendance a = master.attend(leader, "t1", "s1");
    a.next(Duration.ofSeconds(10));
    long firstMap = System.nanoTime();
    assertThat(registered()).isTrue();
    Poll.until(Duration.ofSeconds(10), () -> !registered(), "trainers/t1 to go");
    long gone = System.nanoTime();
    assertThat(Duration.ofNanos(gone - beforeAttend))
        .as("kept for the TTL from the Attend call")
        .isGreaterThanOrEqualTo(CoordinationMaster.TTL);
    assertThat(Duration.ofNanos(gone - firstMap))
        .as("ended soon after the TTL from the first map")
        .isLessThan(CoordinationMaster.TTL.plusSeconds(3));
    Throwable end = a.ended.get(5, TimeUnit.SECONDS);
    assertThat(RpcErrors.reasonOf(end)).isEqualTo(ErrorReason.NOT_JOINED);
    assertThat(Status.fromThrowable(end).getDescription()).contains("no heartbeat");
  }

  @Test
  void attend_sendsTheClusterMapAtOnce_andAgainWhenAPserverComesOrGoes() throws Exception {
    var keys = master.etcd.keys();
    master.put(keys.psDesired(), "2");
    CoordinationMaster.Attendance a = master.attend(leader, "t1", "s1");
    heart.scheduleAtFixedRate(a::beat, 0, 600, TimeUnit.MILLISECONDS);
    ClusterMap first = a.next(Duration.ofSeconds(10));
    assertThat(first.getPserversDesired()).isEqualTo(2);
    assertThat(first.getPserversList()).isEmpty();
    assertThat(first.getTrainersList()).contains("t1");

    master.put(keys.psBackup(1), "127.0.0.1:7011");
    master.put(keys.ps(1), "127.0.0.1:7001");
    ClusterMap withPs = a.until(m -> m.getPserversCount() == 1, Duration.ofSeconds(10));
    PserverEntry ps1 = withPs.getPservers(0);
    assertThat(ps1.getIndex()).isEqualTo(1);
    assertThat(ps1.getAddress()).isEqualTo("127.0.0.1:7001");
    assertThat(ps1.getBackupAddress()).isEqualTo("127.0.0.1:7011");
    assertThat(ps1.getEpoch()).isEqualTo(master.get(keys.ps(1)).orElseThrow().createRevision());
    assertThat(withPs.getRevision()).isGreaterThan(first.getRevision());

    master.etcd.kv().delete(keys.ps(1));
    ClusterMap gone = a.until(m -> m.getPserversCount() == 0, Duration.ofSeconds(10));
    assertThat(gone.getRevision()).isGreaterThan(withPs.getRevision());
  }

  @Test
  void attend_clusterMap_carriesTheCommittedPlacement_andTheMoveInProgress() throws Exception {
    PlacementStore store = new PlacementStore(master.etcd.kv(), master.etcd.keys());
    CoordinationMaster.Attendance a = master.attend(leader, "t1", "s1");
    heart.scheduleAtFixedRate(a::beat, 0, 600, TimeUnit.MILLISECONDS);
    ClusterMap first = a.next(Duration.ofSeconds(10));
    assertThat(first.hasPlacement()).as("none written: the initial map routes").isFalse();

    SlotMove move =
        SlotMove.newBuilder().setEpoch(1).setFrom(0).setTo(1).addSlots(3).setId("m1").build();
    assertThat(store.begin(store.read(), move)).isTrue();
    ClusterMap moving = a.until(ClusterMap::hasPlacementMove, Duration.ofSeconds(10));
    assertThat(moving.getPlacementMove()).isEqualTo(move);

    PlacementMap committed =
        PlacementMap.newBuilder()
            .setEpoch(1)
            .setPservers(2)
            .setSlots(2)
            .addSlotOwners(0)
            .addSlotOwners(1)
            .build();
    assertThat(store.commit(store.read(), committed)).isTrue();
    ClusterMap after =
        a.until(m -> m.hasPlacement() && !m.hasPlacementMove(), Duration.ofSeconds(10));
    assertThat(after.getPlacement()).isEqualTo(committed);
  }

  @Test
  void attend_withoutJoin_isNotJoined_andTheStreamEnds() throws Exception {
    CoordinationMaster.Attendance a = master.attend(leader, "stranger", "s9");
    Throwable end = a.ended.get(10, TimeUnit.SECONDS);
    assertThat(Status.fromThrowable(end).getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.reasonOf(end)).isEqualTo(ErrorReason.NOT_JOINED);
    assertThat(master.get(master.etcd.keys().trainer("stranger"))).isEmpty();
  }

  @Test
  void attend_halfClosed_completesTheStream_andRemovesTheRegistration() throws Exception {
    CoordinationMaster.Attendance a = master.attend(leader, "t1", "s1");
    a.next(Duration.ofSeconds(10));
    assertThat(registered()).isTrue();
    a.leave();
    assertThat(a.ended.get(10, TimeUnit.SECONDS)).as("completed, no error").isNull();
    Poll.until(Duration.ofSeconds(5), () -> !registered(), "trainers/t1 to go");
  }
}
