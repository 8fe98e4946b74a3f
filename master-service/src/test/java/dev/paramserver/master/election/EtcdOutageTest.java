package dev.paramserver.master.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.state.EtcdJobStore;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A leader cut off from etcd stops serving within the lease TTL, and leads again after. */
class EtcdOutageTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private EtcdCoordinator coordinator;
  private MasterElection election;

  @AfterEach
  void close() {
    if (etcd.server().isRunning()) {
      try {
        etcd.server().resume();
      } catch (RuntimeException ignored) {
        // not paused
      }
    }
    if (election != null) {
      election.stop();
    }
    if (coordinator != null) {
      coordinator.close();
    }
  }

  @Test
  void etcdUnreachable_leaderStopsServingWithinTheTtl_andLeadsAgainWhenEtcdIsBack() {
    EtcdSettings settings =
        new EtcdSettings(
            List.of(etcd.endpoint()), etcd.uniqueJob(), Duration.ofSeconds(1), null, null, null);
    coordinator = EtcdCoordinator.connect(settings);
    EtcdJobStore store = new EtcdJobStore(coordinator.kv(), coordinator.keys());
    MasterJob job = new MasterJob(MasterProperties.defaults(), store, Clock.systemUTC());
    election = new MasterElection(coordinator, job, store, "127.0.0.1", Duration.ofSeconds(2), 0);
    election.start();
    election.begin(7777);
    Poll.until(Duration.ofSeconds(10), election::isLeader, "the master to lead");
    assertThat(job.status().getState()).isEqualTo(JobState.WAITING_FOR_DATASET);

    etcd.server().pause();
    long paused = System.nanoTime();
    Poll.until(Duration.ofSeconds(10), () -> !job.isServing(), "the master to stop serving");
    long stoppedMs = (System.nanoTime() - paused) / 1_000_000;
    System.out.println("STOPPED_SERVING_MS after etcd froze: " + stoppedMs);
    assertThat(election.isLeader()).isFalse();
    assertThatThrownBy(job::status)
        .isInstanceOf(ServiceException.class)
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.NOT_LEADER);

    etcd.server().resume();
    Poll.until(Duration.ofSeconds(20), election::isLeader, "the master to lead again");
    assertThat(job.status().getState()).isEqualTo(JobState.WAITING_FOR_DATASET);
  }
}
