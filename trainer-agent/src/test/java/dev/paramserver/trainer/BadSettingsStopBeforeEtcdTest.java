package dev.paramserver.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.service.ConfigurationFailureAnalyzer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A trainer whose settings are bad stops before it touches etcd: its etcd endpoint is a socket that
 * counts connections, and none arrives. The report says which property and what is allowed.
 */
@ExtendWith(OutputCaptureExtension.class)
@Timeout(120)
class BadSettingsStopBeforeEtcdTest {
  @TempDir Path dir;
  private ServerSocket fakeEtcd;
  private final AtomicInteger connections = new AtomicInteger();
  private Thread acceptor;

  @BeforeEach
  void listen() throws IOException {
    fakeEtcd = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    acceptor =
        new Thread(
            () -> {
              while (!fakeEtcd.isClosed()) {
                try (Socket s = fakeEtcd.accept()) {
                  connections.incrementAndGet();
                } catch (SocketException closed) {
                  return;
                } catch (IOException e) {
                  return;
                }
              }
            },
            "fake-etcd");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  @AfterEach
  void close() throws Exception {
    fakeEtcd.close();
    acceptor.join(5000);
  }

  private Throwable start(String... extra) {
    String[] props = {
      "server.port=0",
      "paramserver.etcd.endpoints=http://127.0.0.1:" + fakeEtcd.getLocalPort(),
      "paramserver.etcd.startup-timeout=3s",
      "paramserver.admin.exit-jvm-on-shutdown=false",
      "paramserver.trainer.exit-when-done=false",
      "paramserver.trainer.train-data=" + dir.resolve("*.recordio")
    };
    String[] all = new String[props.length + extra.length];
    System.arraycopy(props, 0, all, 0, props.length);
    System.arraycopy(extra, 0, all, props.length, extra.length);
    long t0 = System.nanoTime();
    Throwable failure =
        catchThrowable(
            () -> new SpringApplicationBuilder(TrainerApplication.class).properties(all).run());
    assertThat(failure).as("the trainer refused to start").isNotNull();
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(60));
    return failure;
  }

  @Test
  void unknownOptimizer_stopsBeforeEtcd_namingPropertyAndValues(CapturedOutput output)
      throws Exception {
    java.nio.file.Files.createFile(dir.resolve("train.recordio"));
    Throwable failure = start("paramserver.trainer.optimizer=adamx");
    String reason =
        "paramserver.trainer.optimizer 'adamx' is not valid: choose one of sgd, momentum,"
            + " nesterov, adam, adamw, adagrad, rmsprop, adadelta";
    assertThat(ConfigurationFailureAnalyzer.reason(failure)).isEqualTo(reason);
    assertThat(output.toString()).contains("Description:").contains(reason);
    assertThat(connections.get()).as("connections to etcd").isZero();
  }

  @Test
  void trainDataMatchingNothing_stopsBeforeEtcd_namingTheGlob() {
    String glob = dir.resolve("missing").resolve("*.recordio").toString();
    Throwable failure = start("paramserver.trainer.train-data=" + glob);
    assertThat(ConfigurationFailureAnalyzer.reason(failure))
        .isEqualTo(
            "paramserver.trainer.train-data: no file matches '"
                + glob
                + "': check the path, or create the RecordIO files first (psctl convert)");
    assertThat(connections.get()).as("connections to etcd").isZero();
  }

  @Test
  void initFromMissingFile_stopsBeforeEtcd() throws Exception {
    java.nio.file.Files.createFile(dir.resolve("train.recordio"));
    Path model = dir.resolve("none.pb");
    Throwable failure = start("paramserver.trainer.init-from=" + model);
    assertThat(ConfigurationFailureAnalyzer.reason(failure))
        .isEqualTo("paramserver.trainer.init-from: no model file at " + model);
    assertThat(connections.get()).as("connections to etcd").isZero();
  }

  /** The control: with good settings the trainer does dial etcd (here: the counting socket). */
  @Test
  void goodSettings_reachEtcd() throws Exception {
    java.nio.file.Files.createFile(dir.resolve("train.recordio"));
    Throwable failure = start();
    assertThat(failure).hasStackTraceContaining("did not answer within");
    assertThat(connections.get()).as("connections to etcd").isPositive();
  }
}
