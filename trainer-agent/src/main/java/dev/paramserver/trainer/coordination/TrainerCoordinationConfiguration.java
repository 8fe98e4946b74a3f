package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.service.EtcdOptOut;
import dev.paramserver.trainer.config.CommunicationProperties;
import dev.paramserver.trainer.config.CoordinationProperties;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.stop.StopSignal;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The trainer's {@link TrainerCoordination}, by {@code paramserver.trainer.coordination.mode}:
 * {@code etcd} (default) over the service's etcd {@link Coordinator}; {@code master} over the
 * masters' Coordination service, with an {@link EtcdOptOut} so that no etcd connection, health
 * indicator or gauge exists, and a "master" health indicator instead of "etcd" (the readiness group
 * includes the one named by the mode). Closed with the context, after the training session.
 */
@Configuration(proxyBeanMethods = false)
class TrainerCoordinationConfiguration {
  static final String MODE = "paramserver.trainer.coordination.mode";

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = MODE, havingValue = "etcd", matchIfMissing = true)
  static class Etcd {
    @Bean(destroyMethod = "close")
    TrainerCoordination etcdTrainerCoordination(
        Coordinator coordinator,
        CommonProperties common,
        CoordinationProperties coordination,
        StopSignal stop) {
      return new EtcdTrainerCoordination(
          coordinator, common.etcd().leaseTtl(), coordination.rejoinTimeout(), stop);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(name = MODE, havingValue = "master")
  static class Master {
    @Bean
    EtcdOptOut trainerEtcdOptOut() {
      return new EtcdOptOut(MODE + "=master");
    }

    @Bean(destroyMethod = "close")
    MasterTrainerCoordination masterTrainerCoordination(
        CoordinationProperties coordination,
        TrainerProperties props,
        ChannelFactory channels,
        StopSignal stop) {
      CommunicationProperties comm = props.communication();
      return new MasterTrainerCoordination(
          coordination.masters(), channels, comm.rpcTimeout(), comm.maxBackoff(), stop);
    }

    /**
     * Health contributor "master": UP while a leading master answers and the membership (if the
     * trainer is a member) holds; DOWN while no master leads or answers, or while it re-joins.
     */
    @Bean
    HealthIndicator masterHealthIndicator(MasterTrainerCoordination coordination) {
      return () ->
          (coordination.healthy() ? Health.up() : Health.down())
              .withDetail("master", coordination.currentMaster())
              .withDetail("membership", coordination.membershipState())
              .withDetail("clusterRevision", coordination.clusterMap().getRevision())
              .build();
    }
  }
}
