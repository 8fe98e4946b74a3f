package dev.paramserver.service;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.ClientTls;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.JobToken;
import io.grpc.ClientInterceptor;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.micrometer.metrics.autoconfigure.MeterRegistryCustomizer;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;
import org.springframework.grpc.server.GlobalServerInterceptor;

/**
 * The Spring plumbing every paramserver service shares: {@link CommonProperties}, the {@link
 * Coordinator} (etcd) and the "etcd" health indicator (unless the service declares an {@link
 * EtcdOptOut}), the token-protected admin endpoints, shared metrics (common tags, etcd call
 * latency, client-side gRPC call latency) and, when Spring Boot's gRPC server is present, its
 * global interceptors: server-side call latency ({@link ServerCallMetrics}) and the {@link
 * ErrorMappingInterceptor}.
 */
@AutoConfiguration
@EnableConfigurationProperties(CommonProperties.class)
public class ServiceSupportAutoConfiguration {
  private static final Logger log = LoggerFactory.getLogger(ServiceSupportAutoConfiguration.class);

  /** Settings are bound, validated and checked before the coordinator touches etcd. */
  @Bean
  static ConfigurationFirst configurationFirst() {
    return new ConfigurationFirst();
  }

  /** Runs every {@link StartupCheck} as soon as its bean exists. */
  @Bean
  static StartupChecks startupChecks() {
    return new StartupChecks();
  }

  /**
   * The etcd coordinator. Startup waits up to {@code paramserver.etcd.startup-timeout} for etcd to
   * answer, logging every 5 s, then fails with a message naming the endpoints. Closed by its
   * destroy method, after every SmartLifecycle bean has stopped (see {@link LifecyclePhases}).
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean({Coordinator.class, EtcdOptOut.class})
  public EtcdCoordinator coordinator(CommonProperties properties) throws InterruptedException {
    EtcdCoordinator coordinator = EtcdCoordinator.connect(properties.etcdSettings());
    Duration wait = properties.etcd().startupTimeout();
    if (wait.isZero()) {
      return coordinator;
    }
    long deadline = System.nanoTime() + wait.toNanos();
    try {
      while (!coordinator.awaitConnected(
          Duration.ofNanos(
              Math.min(Duration.ofSeconds(5).toNanos(), deadline - System.nanoTime())))) {
        if (System.nanoTime() >= deadline) {
          throw new IllegalStateException(
              "etcd at "
                  + properties.etcd().endpoints()
                  + " did not answer within "
                  + wait
                  + " (paramserver.etcd.startup-timeout): start etcd or fix"
                  + " paramserver.etcd.endpoints");
        }
        log.warn(
            "waiting for etcd at {} (giving up after {})", properties.etcd().endpoints(), wait);
      }
    } catch (InterruptedException | RuntimeException e) {
      coordinator.close();
      throw e;
    }
    return coordinator;
  }

  @Bean
  @ConditionalOnMissingBean(name = "etcdHealthIndicator", value = EtcdOptOut.class)
  public EtcdHealthIndicator etcdHealthIndicator(
      Coordinator coordinator, CommonProperties properties) {
    return new EtcdHealthIndicator(coordinator, properties.etcd().endpoints());
  }

  /** Gauge {@code paramserver_etcd_connected}: 1 while etcd answers, else 0. */
  @Bean
  @ConditionalOnClass(MeterBinder.class)
  @ConditionalOnMissingBean(EtcdOptOut.class)
  public MeterBinder etcdConnectedGauge(Coordinator coordinator) {
    return registry ->
        Gauge.builder("paramserver.etcd.connected", coordinator, c -> c.isConnected() ? 1.0 : 0.0)
            .description("1 while the last calls to etcd succeeded, else 0")
            .register(registry);
  }

  /**
   * The client channels of this service: TLS when {@code paramserver.grpc-client.tls.enabled} (see
   * {@link ClientTlsConfiguration}), and client-side call metrics ({@link ClientCallMetrics}) on
   * every call when Micrometer is present, and the job's token ({@code paramserver.admin.token},
   * {@link JobToken}) on every call when one is set: internal calls are refused without it.
   */
  @Bean
  @ConditionalOnMissingBean
  public ChannelFactory channelFactory(
      ObjectProvider<ClientTls> tls,
      ObjectProvider<ClientCallMetrics> metrics,
      CommonProperties properties) {
    List<ClientInterceptor> interceptors = new ArrayList<>();
    metrics.stream().forEach(interceptors::add);
    String token = properties.admin().token();
    if (token != null && !token.isEmpty()) {
      interceptors.add(JobToken.attach(token));
    }
    return new ChannelFactory(tls.getIfAvailable(), interceptors);
  }

  /**
   * Metrics every service shares: common tags ({@link CommonMetricTags}), etcd call latency ({@link
   * EtcdCallMetrics}) and client-side gRPC call latency ({@link ClientCallMetrics}, added to the
   * channels of the {@link ChannelFactory}).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  static class MetricsConfiguration {
    @Bean
    MeterRegistryCustomizer<MeterRegistry> paramserverCommonMetricTags(
        Environment environment, CommonProperties properties) {
      return new CommonMetricTags(environment, properties);
    }

    @Bean
    MeterBinder etcdCallMetrics(ObjectProvider<EtcdCoordinator> coordinator) {
      return registry ->
          coordinator.ifAvailable(c -> c.setCallObserver(new EtcdCallMetrics(registry)));
    }

    @Bean
    @ConditionalOnMissingBean
    ClientCallMetrics clientCallMetrics(MeterRegistry registry) {
      return new ClientCallMetrics(registry);
    }
  }

  /** The admin endpoints and their token filter (servlet web applications only). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  static class AdminConfiguration {

    // no inferred destroy method: closing the context must never start another shutdown
    @Bean(destroyMethod = "")
    @ConditionalOnMissingBean
    AdminShutdown adminShutdown(
        ConfigurableApplicationContext context, CommonProperties properties) {
      boolean exit = properties.admin().exitJvmOnShutdown();
      return new AdminShutdown(
          context,
          code -> {
            if (exit) {
              System.exit(code);
            }
          });
    }

    @Bean
    @ConditionalOnMissingBean
    AdminAddress adminAddress(CommonProperties properties, Environment environment) {
      return new AdminAddress(properties.advertiseHost(), environment);
    }

    @Bean
    AdminController paramserverAdminController(
        ObjectProvider<AdminStatusSource> status, AdminShutdown shutdown) {
      return new AdminController(status, shutdown);
    }

    @Bean
    FilterRegistrationBean<AdminTokenFilter> paramserverAdminTokenFilter(
        CommonProperties properties) {
      FilterRegistrationBean<AdminTokenFilter> registration =
          new FilterRegistrationBean<>(new AdminTokenFilter(properties.admin().token()));
      registration.addUrlPatterns("/admin", "/admin/*");
      registration.setName("paramserverAdminTokenFilter");
      return registration;
    }
  }

  /**
   * The global interceptors of every service's gRPC server (Spring Boot's gRPC support only). They
   * run in {@code @Order}: the call metrics first (outermost), so they see the status a call closed
   * with, and the error mapping last (innermost, next to the handler), so a handler's exception is
   * mapped before Spring's own exception interceptor sees it.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(GlobalServerInterceptor.class)
  static class GrpcConfiguration {
    @Bean
    @GlobalServerInterceptor
    @Order(Ordered.LOWEST_PRECEDENCE)
    @ConditionalOnMissingBean
    ErrorMappingInterceptor errorMappingInterceptor() {
      return new ErrorMappingInterceptor();
    }

    @Bean
    @GlobalServerInterceptor
    @Order(Ordered.HIGHEST_PRECEDENCE)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnMissingBean
    ServerCallMetrics serverCallMetrics(MeterRegistry registry) {
      return new ServerCallMetrics(registry);
    }
  }
}
