package dev.paramserver.serving.grpc;

import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/** The serving replica's gRPC server settings. */
@Configuration(proxyBeanMethods = false)
public class ServingGrpcServerTuning {

  /**
   * Runs the gRPC handlers on the transport threads: a lookup whose version is served already reads
   * a published copy without waiting (see {@code ServedModel}), so it is answered where it arrives,
   * without a hop through an executor; reads that may wait (for {@code min_version} or the first
   * copies), pulls and predictions go to the {@code servingReadExecutor} pool.
   */
  @Bean
  ServerBuilderCustomizer<NettyServerBuilder> servingHandlersOnTransportThreads() {
    return builder -> builder.directExecutor();
  }
}
