package dev.paramserver.it;

import dev.paramserver.serving.ServingApplication;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Serving replicas as Spring contexts in the test's JVM, on loopback, admin token "tok" unless the
 * arguments name one (a replica following a cluster's job needs the job's token).
 */
final class ServingContexts {
  private static final String TOKEN = "--paramserver.admin.token=";

  private ServingContexts() {}

  /**
   * Starts a serving replica with gRPC on {@code grpcPort}, HTTP on a free port, and {@code args}.
   * An option given twice on Spring's command line is read as both values joined by a comma, so the
   * default token is left out when {@code args} set one: "tok,<job token>" is nobody's token, and
   * the pservers refuse that replica's ShardFollow calls.
   */
  static ConfigurableApplicationContext start(int grpcPort, String... args) {
    List<String> all = new ArrayList<>();
    all.add("--server.port=0");
    all.add("--server.address=127.0.0.1");
    all.add("--spring.grpc.server.port=" + grpcPort);
    all.add("--spring.grpc.server.address=127.0.0.1");
    if (Arrays.stream(args).noneMatch(a -> a.startsWith(TOKEN))) {
      all.add(TOKEN + "tok");
    }
    all.addAll(List.of(args));
    return new SpringApplicationBuilder(ServingApplication.class).run(all.toArray(String[]::new));
  }

  /** The base URL of the replica's HTTP (admin) port. */
  static String http(ConfigurableApplicationContext serving) {
    return "http://127.0.0.1:" + serving.getEnvironment().getProperty("local.server.port");
  }
}
