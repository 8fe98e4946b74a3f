package dev.paramserver.it;

import dev.paramserver.serving.ServingApplication;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Serving replicas as Spring contexts in the test's JVM, on loopback, admin token "tok". */
final class ServingContexts {
  private ServingContexts() {}

  /**
   * Starts a serving replica with gRPC on {@code grpcPort}, HTTP on a free port, and {@code args}.
   */
  static ConfigurableApplicationContext start(int grpcPort, String... args) {
    List<String> all = new ArrayList<>();
    all.add("--server.port=0");
    all.add("--server.address=127.0.0.1");
    all.add("--spring.grpc.server.port=" + grpcPort);
    all.add("--spring.grpc.server.address=127.0.0.1");
    all.add("--paramserver.admin.token=tok");
    all.addAll(List.of(args));
    return new SpringApplicationBuilder(ServingApplication.class).run(all.toArray(String[]::new));
  }

  /** The base URL of the replica's HTTP (admin) port. */
  static String http(ConfigurableApplicationContext serving) {
    return "http://127.0.0.1:" + serving.getEnvironment().getProperty("local.server.port");
  }
}
