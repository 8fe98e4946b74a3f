package dev.paramserver.launcher;

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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
class EtcdProcessTest {
  @TempDir Path dir;
  private final Launcher launcher = new Launcher();
  private EtcdProcess etcd;

  @AfterEach
  void tearDown() {
    if (etcd != null) {
      etcd.kill();
    }
    launcher.shutdown();
  }

  @Test
  void start_isHealthy_keepsItsDataAcrossKillAndStart_andStopEndsIt() throws Exception {
    etcd = newEtcd(EtcdProcess.findBinary());
    etcd.start();
    assertThat(health()).contains("true");
    long first = etcd.pid();
    assertThat(first).isPositive();

    assertThat(etcd.signal("STOP")).isTrue();
    assertThatThrownBy(this::health).isInstanceOf(IOException.class);
    assertThat(etcd.signal("CONT")).isTrue();
    assertThat(health()).contains("true");

    etcd.kill();
    assertThat(etcd.isRunning()).isFalse();
    assertThat(etcd.pid()).isEqualTo(-1);
    assertThat(etcd.signal("CONT")).isFalse();
    etcd.start();
    assertThat(etcd.pid()).isNotEqualTo(first);
    assertThat(health()).contains("true");
    assertThat(Files.list(etcd.dataDir())).isNotEmpty();
    assertThat(etcd.logTail(100)).contains("starting etcd");

    etcd.stop(Duration.ofSeconds(5));
    assertThat(etcd.isRunning()).isFalse();
  }

  @Test
  void launch_returnsAtOnce_andAwaitHealthyWaitsUntilItServes() throws Exception {
    etcd = newEtcd(EtcdProcess.findBinary());
    assertThatThrownBy(etcd::awaitHealthy)
        .isInstanceOf(LaunchException.class)
        .hasMessageContaining("not launched");
    etcd.launch();
    assertThat(etcd.isRunning()).isTrue();
    etcd.awaitHealthy();
    assertThat(health()).contains("true");
    // a second launch of a running etcd changes nothing
    long pid = etcd.pid();
    etcd.launch();
    assertThat(etcd.pid()).isEqualTo(pid);
  }

  @Test
  void start_withAMissingBinary_namesTheBinary() {
    etcd = newEtcd(dir.resolve("no-such-etcd").toString());
    assertThatThrownBy(etcd::start)
        .isInstanceOf(LaunchException.class)
        .hasMessageContaining(
            "etcd binary '" + dir.resolve("no-such-etcd") + "' is not an executable file");
  }

  @Test
  void start_whenEtcdExits_reportsTheExitAndTheEndOfItsLog() {
    etcd = newEtcd("/bin/false");
    assertThatThrownBy(etcd::start)
        .isInstanceOf(LaunchException.class)
        .hasMessageContaining("etcd exited with code 1 while starting")
        .hasMessageContaining("starting etcd: /bin/false --name n1");
  }

  @Test
  void samePortTwice_isRejected() {
    assertThatThrownBy(
            () -> new EtcdProcess(launcher, "etcd", 2379, 2379, dir.resolve("d"), dir.resolve("l")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("two different ports");
  }

  private EtcdProcess newEtcd(String binary) {
    int client = freePort();
    int peer = freePort();
    while (peer == client) {
      peer = freePort();
    }
    return new EtcdProcess(
        launcher, binary, client, peer, dir.resolve("data"), dir.resolve("logs/etcd.log"));
  }

  private String health() throws IOException {
    HttpURLConnection conn =
        (HttpURLConnection) URI.create(etcd.endpoint() + "/health").toURL().openConnection();
    conn.setConnectTimeout(500);
    conn.setReadTimeout(500);
    try (InputStream in = conn.getInputStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      conn.disconnect();
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException("no free port on 127.0.0.1", e);
    }
  }
}
