package dev.paramserver.localcluster;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A single-node etcd on 127.0.0.1 whose ports and data directory survive stop and start, so a
 * cluster can lose etcd and get the same one back.
 */
final class EtcdProcess {
  private static final Logger log = LoggerFactory.getLogger(EtcdProcess.class);
  private static final Duration START_TIMEOUT = Duration.ofSeconds(20);

  private final Launcher launcher;
  private final String binary;
  private final int clientPort;
  private final int peerPort;
  private final Path dataDir;
  private final Path logFile;
  private Process process;

  EtcdProcess(
      Launcher launcher, String binary, int clientPort, int peerPort, Path dataDir, Path logFile) {
    this.launcher = launcher;
    this.binary = binary;
    this.clientPort = clientPort;
    this.peerPort = peerPort;
    this.dataDir = dataDir;
    this.logFile = logFile;
  }

  String endpoint() {
    return "http://127.0.0.1:" + clientPort;
  }

  Path dataDir() {
    return dataDir;
  }

  Path logFile() {
    return logFile;
  }

  synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** The pid of the running etcd, or -1. */
  synchronized long pid() {
    return isRunning() ? process.pid() : -1;
  }

  /** Starts etcd (no-op when running) and waits until /health says true. */
  synchronized void start() {
    if (isRunning()) {
      return;
    }
    String client = endpoint();
    String peer = "http://127.0.0.1:" + peerPort;
    List<String> cmd =
        List.of(
            binary,
            "--name",
            "n1",
            "--data-dir",
            dataDir.toString(),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            "n1=" + peer);
    try {
      Files.createDirectories(logFile.getParent());
      Files.writeString(
          logFile,
          "===== " + Instant.now() + " starting etcd: " + String.join(" ", cmd) + "\n",
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
      process =
          launcher.start(
              new ProcessBuilder(Launcher.wrap(cmd))
                  .redirectErrorStream(true)
                  .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile())));
    } catch (IOException e) {
      throw new LocalClusterException(
          "could not start etcd '" + binary + "': " + e.getMessage(), e);
    }
    awaitHealthy();
    log.info("etcd pid {} healthy at {} (data {})", process.pid(), client, dataDir);
  }

  /** SIGTERM, then SIGKILL after {@code grace}; data and ports are kept. */
  synchronized void stop(Duration grace) {
    if (!isRunning()) {
      return;
    }
    Signals.send(process.pid(), "CONT"); // a paused etcd would not act on SIGTERM
    process.destroy();
    if (!waitForExit(grace)) {
      log.warn("etcd pid {} ignored SIGTERM for {}; killing it", process.pid(), grace);
      process.destroyForcibly();
      waitForExit(Duration.ofSeconds(5));
    }
  }

  /** SIGKILL at once; data and ports are kept. */
  synchronized void kill() {
    if (isRunning()) {
      process.destroyForcibly();
      waitForExit(Duration.ofSeconds(5));
    }
  }

  synchronized boolean signal(String name) {
    return isRunning() && Signals.send(process.pid(), name);
  }

  private void awaitHealthy() {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    String last = "no answer yet";
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new LocalClusterException(
            "etcd exited with code "
                + process.exitValue()
                + " while starting; see "
                + logFile
                + " (is another etcd using "
                + dataDir
                + "?)");
      }
      try {
        String body = httpGet(endpoint() + "/health");
        if (body.replace(" ", "").contains("\"health\":\"true\"")) {
          return;
        }
        last = body;
      } catch (IOException e) {
        last = e.toString();
      }
      sleep(100);
    }
    throw new LocalClusterException(
        "etcd at "
            + endpoint()
            + " not healthy within "
            + START_TIMEOUT.toSeconds()
            + " s (last: "
            + last
            + "); see "
            + logFile);
  }

  private static String httpGet(String url) throws IOException {
    HttpURLConnection conn = (HttpURLConnection) URI.create(url).toURL().openConnection();
    conn.setConnectTimeout(500);
    conn.setReadTimeout(1000);
    try (InputStream in = conn.getInputStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      conn.disconnect();
    }
  }

  private boolean waitForExit(Duration timeout) {
    try {
      return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !process.isAlive();
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LocalClusterException("interrupted while waiting for etcd", e);
    }
  }
}
