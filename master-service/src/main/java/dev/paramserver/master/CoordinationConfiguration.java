package dev.paramserver.master;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.EtcdCoordinator;
import dev.paramserver.coordination.EtcdSettings;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import java.time.Duration;
import java.util.Arrays;
import net.devh.boot.grpc.server.interceptor.GrpcGlobalServerInterceptor;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The etcd coordinator and the gRPC error mapping, until service-support provides them for every
 * service.
 */
@Configuration(proxyBeanMethods = false)
class CoordinationConfiguration {
  @Bean(destroyMethod = "close")
  Coordinator coordinator(
      @Value("${paramserver.etcd.endpoints:http://127.0.0.1:2379}") String endpoints,
      @Value("${paramserver.job:default}") String job,
      @Value("${paramserver.etcd.call-timeout:5s}") Duration callTimeout) {
    return EtcdCoordinator.connect(
        new EtcdSettings(
            Arrays.stream(endpoints.split(",")).map(String::trim).toList(),
            job,
            callTimeout,
            null,
            null,
            null));
  }

  @GrpcGlobalServerInterceptor
  ErrorMappingInterceptor errorMappingInterceptor() {
    return new ErrorMappingInterceptor();
  }
}
