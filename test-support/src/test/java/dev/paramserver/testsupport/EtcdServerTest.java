package dev.paramserver.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;

class EtcdServerTest {

  @Test
  void start_isHealthy_survivesPauseAndRestart_andStopCleansUp() throws Exception {
    Path dir;
    long pid;
    try (EtcdServer server = EtcdServer.start()) {
      assertThat(server.endpoint()).startsWith("http://127.0.0.1:");
      assertThat(health(server)).contains("true");
      dir = server.logFile().getParent();
      pid = server.pid();

      server.pause();
      assertThatThrownBy(() -> health(server)).isInstanceOf(IOException.class);
      server.resume();
      assertThat(health(server)).contains("true");

      server.kill();
      assertThat(server.isRunning()).isFalse();
      assertThatThrownBy(() -> health(server)).isInstanceOf(IOException.class);
      server.restart();
      assertThat(server.pid()).isNotEqualTo(pid);
      assertThat(health(server)).contains("true");
      pid = server.pid();
    }
    assertThat(Files.exists(dir)).isFalse();
    long stoppedPid = pid;
    Poll.until(
        Duration.ofSeconds(5),
        () -> ProcessHandle.of(stoppedPid).map(h -> !h.isAlive()).orElse(true),
        "etcd process to exit");
  }

  @Test
  void start_retriesWithNewPorts_whenAPortWasTakenMeanwhile() throws Exception {
    try (ServerSocket squatter = new ServerSocket()) {
      squatter.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      int taken = squatter.getLocalPort();
      AtomicInteger calls = new AtomicInteger();
      IntSupplier ports = () -> calls.getAndIncrement() == 0 ? taken : FreePorts.next();
      try (EtcdServer server = EtcdServer.start(ports)) {
        assertThat(server.clientPort()).isNotEqualTo(taken);
        assertThat(health(server)).contains("true");
      }
    }
  }

  @Test
  void poll_timesOut_withMessageNamingTheCondition() {
    assertThatThrownBy(
            () ->
                Poll.until(Duration.ofMillis(100), Duration.ofMillis(10), () -> false, "pigs fly"))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("pigs fly");
  }

  @Test
  void freePorts_differ() {
    assertThat(FreePorts.next()).isPositive().isNotEqualTo(0);
  }

  private static String health(EtcdServer server) throws IOException {
    HttpURLConnection conn =
        (HttpURLConnection) URI.create(server.endpoint() + "/health").toURL().openConnection();
    conn.setConnectTimeout(500);
    conn.setReadTimeout(500);
    try (InputStream in = conn.getInputStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
