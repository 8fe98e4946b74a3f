package dev.paramserver.pserver.k8s;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.service.CommonProperties;
import java.time.Duration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The beans of a pserver run by a StatefulSet whose replicas are the job's pservers ({@link
 * KubernetesProperties}): none unless {@code grow-job} or {@code stateful-set} is set.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnExpression(
    "${paramserver.pserver.kubernetes.grow-job:false}"
        + " or '${paramserver.pserver.kubernetes.stateful-set:}' != ''")
class KubernetesConfiguration {
  private static final Duration POLL = Duration.ofSeconds(1);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

  @Bean
  LeaderMaster pserverLeaderMaster(
      Coordinator coordinator,
      ChannelFactory channels,
      CommonProperties common,
      KubernetesProperties properties) {
    return new LeaderMaster(
        coordinator, channels, common.admin().token(), properties.callTimeout());
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnProperty(prefix = "paramserver.pserver.kubernetes", name = "grow-job")
  JobGrowth pserverJobGrowth(
      Coordinator coordinator,
      LeaderMaster master,
      PserverProperties pserver,
      KubernetesProperties properties) {
    return new JobGrowth(
        coordinator, master, pserver.index(), properties.growTimeout(), MAX_BACKOFF);
  }

  @Bean
  @ConditionalOnExpression("'${paramserver.pserver.kubernetes.stateful-set:}' != ''")
  PreStopHook pserverPreStopHook(
      LeaderMaster master, PserverProperties pserver, KubernetesProperties properties) {
    KubernetesApi api =
        KubernetesApi.inCluster(
            properties.apiUrl(),
            properties.serviceAccountDir(),
            System.getenv(),
            properties.callTimeout());
    String namespace =
        properties.namespace().isEmpty()
            ? KubernetesApi.podNamespace(properties.serviceAccountDir())
            : properties.namespace();
    String name = properties.statefulSet();
    return new PreStopHook(
        () -> api.statefulSetReplicas(namespace, name),
        master,
        pserver.index(),
        properties.preStopTimeout(),
        properties.shutdownWait(),
        POLL);
  }
}
