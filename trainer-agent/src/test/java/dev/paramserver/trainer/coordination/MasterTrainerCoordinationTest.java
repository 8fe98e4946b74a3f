package dev.paramserver.trainer.coordination;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.AcquireLockResponse;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.LockName;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PserverEntry;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.trainer.testing.FakeCoordination;
import dev.paramserver.trainer.testing.InProcessChannels;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The master-mode client against in-process Coordination services (a leader and a standby). */
@Timeout(30)
class MasterTrainerCoordinationTest {
  private static final JoinDetails DETAILS =
      new JoinDetails(
          "t-1",
          "session-1",
          "127.0.0.1:9",
          List.of(ParameterSpec.newBuilder().setName("w").addShape(4).build()),
          TrainingMode.SYNC,
          0,
          ModelFile.newBuilder().setModel("softmax").putConfig("classes", "2").build());

  private FakeCoordination standby;
  private FakeCoordination leader;
  private final AtomicBoolean stop = new AtomicBoolean();
  private MasterTrainerCoordination coordination;

  @BeforeEach
  void start() throws Exception {
    standby = new FakeCoordination();
    leader = new FakeCoordination();
    standby.leader = leader.address();
    coordination =
        new MasterTrainerCoordination(
            List.of(standby.address()),
            new InProcessChannels(),
            Duration.ofSeconds(5),
            Duration.ofMillis(50),
            stop::get);
  }

  @AfterEach
  void stop() {
    stop.set(true);
    coordination.close();
    standby.close();
    leader.close();
  }

  @Test
  void join_atAStandby_hopsToTheLeaderItNames_andAttendsWithHeartbeats() {
    leader.map = map(3, "ps-0");
    try (Membership m = coordination.join(DETAILS)) {
      assertThat(m.trainerId()).isEqualTo("t-1");
      assertThat(m.job()).isEqualTo("fake-job");
      assertThat(leader.joins)
          .singleElement()
          .satisfies(
              j -> {
                assertThat(j.getParametersList()).isEqualTo(DETAILS.parameters());
                assertThat(j.getMode()).isEqualTo(TrainingMode.SYNC);
                assertThat(j.getEndpoint()).isEqualTo("127.0.0.1:9");
                assertThat(j.getSession()).isEqualTo("session-1");
                assertThat(j.getModelDescription())
                    .as("the model's description, for the master to record")
                    .isEqualTo(DETAILS.description());
              });
      assertThat(coordination.masters().current()).contains(leader.address());
      Poll.until(Duration.ofSeconds(10), () -> leader.heartbeats.get() >= 3, "heartbeats");
      assertThat(coordination.pservers().address(0)).contains("ps-0");
      assertThat(coordination.attending()).isTrue();
    }
    Poll.until(Duration.ofSeconds(10), () -> leader.halfCloses.get() == 1, "the stream closed");
  }

  @Test
  void aBrokenStream_isFollowedByAJoinAndAnAttendAgain_withTheNewMap() {
    standby.leader = null; // the first master leads
    standby.map = map(1, "ps-0");
    try (Membership m = coordination.join(DETAILS)) {
      Poll.until(Duration.ofSeconds(10), () -> standby.heartbeats.get() >= 1, "attending");
      standby.map = map(2, "ps-0-restarted");
      standby.breakStream();
      Poll.until(
          Duration.ofSeconds(10),
          () -> coordination.pservers().address(0).equals(Optional.of("ps-0-restarted")),
          "the new map after the re-attend");
      assertThat(standby.joins).hasSize(2);
      assertThat(m.isAlive()).isTrue();
    }
  }

  @Test
  void initialisationLock_heldByAnother_isEmpty_thenGranted_andReleasedWithItsInitId() {
    standby.leader = null;
    standby.lockAnswers.add(held("t-2"));
    standby.lockAnswers.add(
        AcquireLockResponse.newBuilder()
            .setOutcome(AcquireLockResponse.Outcome.GRANTED)
            .setDone("init-0")
            .build());
    try (Membership m = coordination.join(DETAILS)) {
      assertThat(m.locks().tryInitialisation()).isEmpty();
      Optional<JobLocks.InitLock> lock = m.locks().tryInitialisation();
      assertThat(lock).isPresent();
      assertThat(lock.get().previousInitId()).contains("init-0");
      lock.get().done("init-0");
      lock.get().close();
    }
    assertThat(standby.acquires)
        .extracting(a -> a.getLock() + "/" + a.getTrainerId())
        .containsExactly("INIT_PARAMETERS/t-1", "INIT_PARAMETERS/t-1");
    assertThat(standby.releases)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.getLock()).isEqualTo(LockName.INIT_PARAMETERS);
              assertThat(r.getDone()).isEqualTo("init-0");
            });
  }

  @Test
  void evaluationAndExport_areTheTrainersOnlyWhenGranted() {
    standby.leader = null;
    standby.lockAnswers.add(held("t-2"));
    standby.lockAnswers.add(held("t-1")); // held by this trainer already: a restart
    standby.lockAnswers.add(held("t-2"));
    try (Membership m = coordination.join(DETAILS)) {
      assertThat(m.locks().claimEvaluation(3)).isFalse();
      assertThat(m.locks().claimEvaluation(4)).isTrue();
      assertThat(m.locks().claimExport()).isFalse();
      assertThat(m.locks().claimExport()).isTrue();
    }
    assertThat(standby.acquires)
        .extracting(a -> a.getLock() + "/" + a.getPass())
        .containsExactly("EVALUATE_PASS/3", "EVALUATE_PASS/4", "EXPORT_MODEL/0", "EXPORT_MODEL/0");
  }

  private static AcquireLockResponse held(String holder) {
    return AcquireLockResponse.newBuilder()
        .setOutcome(AcquireLockResponse.Outcome.HELD)
        .setHolder(holder)
        .build();
  }

  private static ClusterMap map(long revision, String ps0) {
    return ClusterMap.newBuilder()
        .setRevision(revision)
        .setPserversDesired(1)
        .addPservers(PserverEntry.newBuilder().setIndex(0).setAddress(ps0).setEpoch(revision))
        .addTrainers("t-1")
        .build();
  }
}
