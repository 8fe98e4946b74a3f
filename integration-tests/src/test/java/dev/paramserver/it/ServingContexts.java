package dev.paramserver.it;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.pserver.PserverApplication;
import dev.paramserver.serving.ServingApplication;
import dev.paramserver.testsupport.Poll;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Serving replicas as Spring contexts in the test's JVM, on loopback, admin token "tok" unless the
 * arguments name one (a replica following a cluster's job needs the job's token); and the one
 * pserver of a job for them to follow, the same way.
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

  /**
   * Starts the one pserver of {@code coordinator}'s job (token "tok", no periodic checkpoints, its
   * checkpoints in {@code checkpoints}) and returns once it registered as pserver 0, which may be
   * after the context started.
   */
  static ConfigurableApplicationContext startPserver(
      Coordinator coordinator, String etcdEndpoint, Path checkpoints) {
    ConfigurableApplicationContext pserver =
        new SpringApplicationBuilder(PserverApplication.class)
            .run(
                "--server.port=0",
                "--server.address=127.0.0.1",
                "--spring.grpc.server.port=0",
                "--spring.grpc.server.address=127.0.0.1",
                "--paramserver.etcd.endpoints=" + etcdEndpoint,
                "--paramserver.job=" + coordinator.keys().job(),
                "--paramserver.admin.token=tok",
                "--paramserver.pserver.checkpoint-dir=" + checkpoints,
                "--paramserver.pserver.checkpoint-interval=0s",
                "--paramserver.pserver.desired=1");
    try {
      Poll.until(
          Duration.ofSeconds(30),
          () -> coordinator.kv().get(coordinator.keys().ps(0)).isPresent(),
          "pserver 0 registered");
      return pserver;
    } catch (RuntimeException | AssertionError e) {
      pserver.close();
      throw e;
    }
  }

  /** The base URL of the replica's HTTP (admin) port. */
  static String http(ConfigurableApplicationContext serving) {
    return "http://127.0.0.1:" + serving.getEnvironment().getProperty("local.server.port");
  }
}
