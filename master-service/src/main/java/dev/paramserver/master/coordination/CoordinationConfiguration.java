package dev.paramserver.master.coordination;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.service.LifecyclePhases;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.EventListener;

/** The Coordination service's domain beans (its gRPC adapter is in {@code master.grpc}). */
@Configuration(proxyBeanMethods = false)
class CoordinationConfiguration {
  /** Stopped just before the election resigns (higher phases stop first). */
  static final int PHASE = LifecyclePhases.ROLE + 1;

  @Bean
  CoordinatedTrainers trainerCoordination(
      Coordinator coordinator, MasterElection election, CommonProperties common) {
    LeaderCheck leader =
        new LeaderCheck(
            election::isLeader,
            () -> election.leaderAddress().filter(a -> !a.equals(election.identity())));
    return new CoordinatedTrainers(coordinator, leader, common.etcd().leaseTtl(), PHASE);
  }

  @Bean
  ShutdownListener coordinationShutdownListener(CoordinatedTrainers coordination) {
    return new ShutdownListener(coordination);
  }

  /**
   * Ends the Attend streams as soon as the master begins to close, before the gRPC server drains
   * its calls (a stream open for good would hold the drain up to its grace period).
   */
  static final class ShutdownListener {
    private final CoordinatedTrainers coordination;

    ShutdownListener(CoordinatedTrainers coordination) {
      this.coordination = coordination;
    }

    @EventListener
    public void onClosed(ContextClosedEvent event) {
      coordination.shutdown();
    }
  }
}
