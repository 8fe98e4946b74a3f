package dev.paramserver.bench.experiment;

import io.grpc.ServerBuilder;
import java.lang.reflect.Method;
import net.devh.boot.grpc.server.serverfactory.GrpcServerConfigurer;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * An experiment, not part of any service: loaded into an unchanged pserver exec jar with Spring
 * Boot's {@code PropertiesLauncher} ({@code -Dloader.path}), it configures the pserver's gRPC
 * server the way the bare echo baseline is tuned: handlers on the transport threads (direct
 * executor) and a 16 MiB flow-control window. The suite's {@code --experiment tuned-pserver}
 * measures what this change would gain before anyone edits the service.
 */
@AutoConfiguration
public class TunedGrpcServerConfiguration {
  static final int WINDOW = 16 * 1024 * 1024;

  @Bean
  GrpcServerConfigurer benchTunedServer() {
    return TunedGrpcServerConfiguration::tune;
  }

  static void tune(ServerBuilder<?> builder) {
    builder.directExecutor();
    try {
      Method m = builder.getClass().getMethod("flowControlWindow", int.class);
      m.invoke(builder, WINDOW);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "cannot set the flow-control window on " + builder.getClass().getName(), e);
    }
    System.err.println("bench experiment: gRPC server tuned (direct executor, 16 MiB window)");
  }
}
