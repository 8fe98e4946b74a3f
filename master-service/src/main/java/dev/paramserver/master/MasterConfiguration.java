package dev.paramserver.master;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.master.admin.MasterStatusSource;
import dev.paramserver.master.config.MasterProperties;
import dev.paramserver.master.console.JobConsole;
import dev.paramserver.master.console.PserverStatuses;
import dev.paramserver.master.coordination.CoordinatedTrainers;
import dev.paramserver.master.dataset.DatasetIndexer;
import dev.paramserver.master.election.LeadershipHealthIndicator;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.master.metrics.MasterMetrics;
import dev.paramserver.master.placement.PlacementCoordinator;
import dev.paramserver.master.placement.PserverCalls;
import dev.paramserver.master.placement.ScalingProperties;
import dev.paramserver.master.state.EtcdJobStore;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.master.task.TimeoutChecker;
import dev.paramserver.master.task.TrainerDepartures;
import dev.paramserver.master.tracking.TrackingFiles;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.service.LifecyclePhases;
import dev.paramserver.storage.Storage;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * The master's beans: job, state store, election, timeout checker, trainer departures, health,
 * admin status and the job console.
 */
@Configuration(proxyBeanMethods = false)
class MasterConfiguration {
  /** The election stops after the gRPC server drained its calls, before channels close. */
  static final int ROLE_PHASE = LifecyclePhases.ROLE;

  @Bean
  EtcdJobStore masterJobStore(Coordinator coordinator) {
    return new EtcdJobStore(coordinator.kv(), coordinator.keys());
  }

  @Bean(destroyMethod = "close")
  Storage masterStorage(MasterStorageProperties storage) {
    return Storage.create(storage.s3(), "paramserver.master.s3");
  }

  @Bean
  MasterJob masterJob(
      MasterProperties props, EtcdJobStore store, AdminAddress adminAddress, Storage storage) {
    MasterJob job = new MasterJob(props, store, Clock.systemUTC(), new DatasetIndexer(storage));
    job.setAdminAddress(adminAddress::get);
    return job;
  }

  /** Where run tracking writes: checked at start (a set directory must be writable). */
  @Bean
  TrackingFiles masterTrackingFiles(MasterProperties props, CommonProperties common) {
    return TrackingFiles.resolve(props.tracking(), common.job());
  }

  /** The job as the console and {@code /admin/job} show it; samples only while leading. */
  @Bean
  JobConsole jobConsole(
      MasterJob job,
      MasterElection election,
      Coordinator coordinator,
      PserverStatuses pserverStatuses,
      CommonProperties common,
      MasterProperties props,
      TrackingFiles tracking,
      ObjectProvider<PlacementCoordinator> placement) {
    return JobConsole.create(
        job,
        election,
        coordinator,
        pserverStatuses,
        common.admin().token(),
        props.console(),
        tracking,
        props.tracking().lossEveryRecords(),
        common.advertiseHost(),
        ROLE_PHASE,
        placement.getIfAvailable());
  }

  @Bean
  MasterElection masterElection(
      Coordinator coordinator,
      MasterJob job,
      EtcdJobStore store,
      CommonProperties common,
      MasterProperties props) {
    MasterElection election =
        new MasterElection(
            coordinator, job, store, common.advertiseHost(), common.etcd().leaseTtl(), ROLE_PHASE);
    election.setAdvertisePort(props.advertisePort());
    return election;
  }

  /** Scales the live job ({@code psctl scale}): works only while this master leads. */
  @Bean(destroyMethod = "close")
  PlacementCoordinator placementCoordinator(
      Coordinator coordinator,
      MasterElection election,
      PserverCalls pserverCalls,
      CommonProperties common,
      ScalingProperties scaling,
      MeterRegistry registry) {
    PlacementCoordinator p =
        new PlacementCoordinator(
            coordinator, election, pserverCalls, scaling, common.admin().token());
    p.bindTo(registry);
    p.start(Duration.ofSeconds(5));
    return p;
  }

  @Bean
  TimeoutChecker masterTimeoutChecker(MasterJob job, MasterProperties props) {
    return new TimeoutChecker(job, props.timeoutCheckInterval(), ROLE_PHASE);
  }

  @Bean
  TrainerDepartures masterTrainerDepartures(MasterJob job, Coordinator coordinator) {
    return new TrainerDepartures(
        job, coordinator.kv(), coordinator.keys().trainersPrefix(), ROLE_PHASE);
  }

  @Bean("leadership")
  LeadershipHealthIndicator leadershipHealthIndicator(MasterElection election) {
    return new LeadershipHealthIndicator(election);
  }

  @Bean
  MasterStatusSource masterStatusSource(MasterElection election, MasterJob job) {
    return new MasterStatusSource(election, job);
  }

  @Bean
  MasterMetrics masterMetrics(
      MasterElection election, MasterJob job, CoordinatedTrainers coordination) {
    return new MasterMetrics(election, job, coordination::coordinatedTrainers);
  }

  @Bean
  GrpcStartListener masterGrpcStartListener(MasterElection election) {
    return new GrpcStartListener(election);
  }

  /** Starts the campaign once the gRPC server listens (its bound port is then known). */
  static final class GrpcStartListener {
    private final MasterElection election;

    GrpcStartListener(MasterElection election) {
      this.election = election;
    }

    @EventListener
    public void onGrpcStarted(GrpcServerStartedEvent event) {
      election.begin(event.getPort());
    }
  }
}
