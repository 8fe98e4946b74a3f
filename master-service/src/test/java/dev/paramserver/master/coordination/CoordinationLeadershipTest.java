package dev.paramserver.master.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.master.MasterContexts;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.MasterGrpc;
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
 * Only the leader coordinates: a standby refuses with NOT_LEADER and names the leader; when the
 * leader stops, its Attend streams end with UNAVAILABLE (NOT_LEADER) and the trainers re-join and
 * re-attend the new leader.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CoordinationLeadershipTest {
  @RegisterExtension static final EtcdExtension etcdServer = new EtcdExtension();
  private final ScheduledExecutorService heart = Executors.newSingleThreadScheduledExecutor();
  private CoordinationMaster master;

  @BeforeEach
  void start() {
    master = new CoordinationMaster(etcdServer);
  }

  @AfterEach
  void stop() {
    heart.shutdownNow();
    master.close();
  }

  private static JoinRequest join() {
    return JoinRequest.newBuilder()
        .setTrainerId("t1")
        .setSession("s1")
        .addAllParameters(Models.mlp())
        .build();
  }

  @Test
  void standby_refusesWithNotLeader_namingTheLeader_onBothServices() {
    ConfigurableApplicationContext leader = master.startLeader();
    ConfigurableApplicationContext standby = master.start();
    MasterElection b = MasterContexts.election(standby);
    Poll.until(
        Duration.ofSeconds(30),
        () -> b.state() == MasterElection.State.CAMPAIGNING && b.leaderAddress().isPresent(),
        "the second master to stand by, knowing the leader");
    String leaderAddress = MasterContexts.election(leader).identity();

    Throwable t = catchThrowable(() -> master.stub(standby).join(join()));
    assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.NOT_LEADER);
    assertThat(RpcErrors.metadataOf(t)).containsEntry("leader", leaderAddress);

    Throwable m =
        catchThrowable(
            () ->
                MasterGrpc.newBlockingStub(master.channel(standby))
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .getStatus(GetStatusRequest.getDefaultInstance()));
    assertThat(RpcErrors.reasonOf(m)).isEqualTo(ErrorReason.NOT_LEADER);
    assertThat(RpcErrors.metadataOf(m)).containsEntry("leader", leaderAddress);
  }

  @Test
  void leaderStops_streamsEndUnavailableNotLeader_andTheTrainerRejoinsTheNewLeader()
      throws Exception {
    ConfigurableApplicationContext first = master.startLeader();
    ConfigurableApplicationContext second = master.start();
    master.stub(first).join(join());
    CoordinationMaster.Attendance a = master.attend(first, "t1", "s1");
    heart.scheduleAtFixedRate(a::beat, 0, 500, TimeUnit.MILLISECONDS);
    a.next(Duration.ofSeconds(10));

    first.close();
    Throwable end = a.ended.get(20, TimeUnit.SECONDS);
    assertThat(Status.fromThrowable(end).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(RpcErrors.reasonOf(end)).isEqualTo(ErrorReason.NOT_LEADER);

    MasterElection b = MasterContexts.election(second);
    Poll.until(Duration.ofSeconds(30), b::isLeader, "the standby to take over");
    Throwable notJoined = master.attend(second, "t1", "s1").ended.get(10, TimeUnit.SECONDS);
    assertThat(RpcErrors.reasonOf(notJoined))
        .as("a new leader knows only the trainers that joined it")
        .isEqualTo(ErrorReason.NOT_JOINED);

    assertThat(master.stub(second).join(join()).getDefinedModel())
        .as("the model is the job's, kept in etcd")
        .isFalse();
    CoordinationMaster.Attendance again = master.attend(second, "t1", "s1");
    again.next(Duration.ofSeconds(10));
    Poll.until(
        Duration.ofSeconds(5),
        () -> master.get(master.etcd.keys().trainer("t1")).isPresent(),
        "t1 registered by the new leader");
  }
}
