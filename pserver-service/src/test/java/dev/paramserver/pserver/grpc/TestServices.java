package dev.paramserver.pserver.grpc;

import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.service.AdminAddress;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.ExecutorService;
import org.springframework.core.env.StandardEnvironment;

/** The pserver's gRPC service as the adapter tests run it. */
final class TestServices {
  private TestServices() {}

  /**
   * {@code shard}'s service, serving index 0 alone, its blocking work on {@code executor} and its
   * errors mapped to statuses as in the service.
   */
  static ServerServiceDefinition parameterServer(ParameterShard shard, ExecutorService executor) {
    return parameterServer(shard, Lifecycles.serving(shard, 0), executor);
  }

  /** {@code shard}'s service in the role {@code lifecycle} holds (a test may drain it). */
  static ServerServiceDefinition parameterServer(
      ParameterShard shard, ShardLifecycle lifecycle, ExecutorService executor) {
    return ServerInterceptors.intercept(
        new ParameterServerGrpcService(
            shard,
            lifecycle,
            executor,
            new SimpleMeterRegistry(),
            new ShardTraffic(),
            new AdminAddress("127.0.0.1", new StandardEnvironment())),
        new ErrorMappingInterceptor());
  }
}
