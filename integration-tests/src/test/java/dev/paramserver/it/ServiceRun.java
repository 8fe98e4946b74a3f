package dev.paramserver.it;

import dev.paramserver.localcluster.ClassDataArchives;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.testsupport.FreePorts;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * One service process started by hand from its exec jar (outside a LocalCluster), its output in a
 * log file: for starts that must fail, or that need an etcd state prepared beforehand.
 */
final class ServiceRun implements AutoCloseable {
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  final Process process;
  final Path log;
  final int httpPort;
  final int grpcPort;

  private ServiceRun(Process process, Path log, int httpPort, int grpcPort) {
    this.process = process;
    this.log = log;
    this.httpPort = httpPort;
    this.grpcPort = grpcPort;
  }

  /** Starts the role's jar on free loopback ports with the given properties (they win). */
  static ServiceRun start(Role role, Path log, Map<String, String> properties) throws IOException {
    return start(role, log, properties, List.of());
  }

  /**
   * Like {@link #start(Role, Path, Map)}, with JVM options after the role's defaults (so that, for
   * example, an {@code -Xmx} given here wins).
   */
  static ServiceRun start(
      Role role, Path log, Map<String, String> properties, List<String> jvmOptions)
      throws IOException {
    int http = freePort();
    int grpc = freePort();
    List<String> cmd = new ArrayList<>();
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    cmd.add(java);
    cmd.addAll(ClusterSpec.defaultJvmOptions(role));
    cmd.addAll(jvmOptions);
    // from the build's class-data archive when a cluster (or prepareClassData) made one
    ClassDataArchives.Launch launch =
        ClassDataArchives.enabled()
            ? ClassDataArchives.launchOf(Jobs.jar(role), java)
            : new ClassDataArchives.Launch(Jobs.jar(role), Optional.empty());
    cmd.addAll(launch.jvmOptions());
    cmd.add("-jar");
    cmd.add(launch.jar().toString());
    cmd.add("--server.address=127.0.0.1");
    cmd.add("--server.port=" + http);
    cmd.add("--spring.grpc.server.address=127.0.0.1");
    cmd.add("--spring.grpc.server.port=" + grpc);
    properties.forEach((k, v) -> cmd.add("--" + k + "=" + v));
    Files.createDirectories(log.getParent());
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    return new ServiceRun(p, log, http, grpc);
  }

  /**
   * Makes the class-data archive of the role's jar now, if there is none yet (with an etcd of its
   * own for the training run), so that the starts that follow are quick.
   */
  static void prepareClassData(Role role, Path runDir) {
    ClusterSpec.Builder b = ClusterSpec.builder(runDir).jar(role, Jobs.jar(role));
    switch (role) {
      case MASTER -> b.masters(1);
      case PSERVER -> b.pservers(1);
      case TRAINER -> b.trainers(1);
    }
    LocalCluster.prepareClassData(b.build());
  }

  /** Waits for the process to exit; returns its exit code. */
  int awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError("process did not exit within " + timeout + "; see " + log);
    }
    return process.exitValue();
  }

  /**
   * Waits until the gRPC port accepts connections. A channel dialled before that fails its first
   * connection and then backs off exponentially (1 s, 1.6 s, 2.6 s, ...), so a client that dials a
   * restarting process at once reaches it seconds after it listens.
   */
  void awaitGrpcListening(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), grpcPort), 1000);
        return;
      } catch (IOException e) {
        if (!process.isAlive()) {
          throw new AssertionError("process exited with " + process.exitValue() + "; see " + log);
        }
        if (System.nanoTime() > deadline) {
          throw new AssertionError(
              "gRPC port " + grpcPort + " not listening within " + timeout + "; see " + log);
        }
        Thread.sleep(20);
      }
    }
  }

  String output() throws IOException {
    return Files.readString(log, StandardCharsets.UTF_8);
  }

  /** The HTTP status of GET path on the service's HTTP port, or -1 when it does not answer. */
  static int httpGet(int port, String path) {
    try {
      HttpResponse<Void> r =
          HTTP.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                  .timeout(Duration.ofSeconds(5))
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.discarding());
      return r.statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  private static int freePort() {
    return FreePorts.next();
  }

  @Override
  public void close() {
    if (!process.isAlive()) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
