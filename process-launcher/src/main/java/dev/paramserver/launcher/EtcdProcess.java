package dev.paramserver.launcher;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
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
 * cluster or a fault test can lose etcd and get the same one back. Its output is appended to {@link
 * #logFile()}. Start failures throw {@link LaunchException} with the end of that log.
 */
public final class EtcdProcess {
  private static final Logger log = LoggerFactory.getLogger(EtcdProcess.class);
  private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
  private static final Duration KILL_WAIT = Duration.ofSeconds(5);

  private final Launcher launcher;
  private final String binary;
  private final int clientPort;
  private final int peerPort;
  private final Path dataDir;
  private final Path logFile;
  private Process process;

  /**
   * @param launcher starts the process (so it ends with this JVM)
   * @param binary the etcd executable, for example from {@link #findBinary()}
   */
  public EtcdProcess(
      Launcher launcher, String binary, int clientPort, int peerPort, Path dataDir, Path logFile) {
    if (clientPort == peerPort) {
      throw new IllegalArgumentException(
          "etcd needs two different ports, got client and peer port " + clientPort);
    }
    this.launcher = launcher;
    this.binary = binary;
    this.clientPort = clientPort;
    this.peerPort = peerPort;
    this.dataDir = dataDir;
    this.logFile = logFile;
  }

  /**
   * The etcd binary: {@code $ETCD_BIN}, else {@code etcd} on the PATH, else {@code /usr/bin/etcd}.
   *
   * @throws IllegalStateException naming what to install or set when there is none
   */
  public static String findBinary() {
    String env = System.getenv("ETCD_BIN");
    if (env != null && !env.isBlank()) {
      if (Files.isExecutable(Path.of(env))) {
        return env;
      }
      throw new IllegalStateException("ETCD_BIN=" + env + " is not an executable file");
    }
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(File.pathSeparator)) {
        if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "etcd"))) {
          return Path.of(dir, "etcd").toString();
        }
      }
    }
    if (Files.isExecutable(Path.of("/usr/bin/etcd"))) {
      return "/usr/bin/etcd";
    }
    throw new IllegalStateException(
        "etcd not found: install it with 'sudo apt-get install -y etcd-server' or set ETCD_BIN");
  }

  /** The client URL, {@code http://127.0.0.1:PORT}. */
  public String endpoint() {
    return "http://127.0.0.1:" + clientPort;
  }

  public int clientPort() {
    return clientPort;
  }

  public Path dataDir() {
    return dataDir;
  }

  public Path logFile() {
    return logFile;
  }

  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** The pid of the running etcd, or -1. */
  public synchronized long pid() {
    return isRunning() ? process.pid() : -1;
  }

  /** Starts etcd (no-op when running) and waits until /health says true. */
  public synchronized void start() {
    launch();
    awaitHealthy();
  }

  /**
   * Starts the etcd process (no-op when running) without waiting for it to serve: {@link
   * #awaitHealthy} waits. Its endpoint is known before it serves, so what connects to it may start
   * meanwhile.
   */
  public synchronized void launch() {
    if (isRunning()) {
      return;
    }
    if (binary.contains(File.separator) && !Files.isExecutable(Path.of(binary))) {
      // checked here: behind setsid/setpriv a missing binary would look like an etcd that exited
      throw new LaunchException("etcd binary '" + binary + "' is not an executable file");
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
      Files.createDirectories(logFile.toAbsolutePath().getParent());
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
      throw new LaunchException("could not start etcd '" + binary + "': " + e.getMessage(), e);
    }
  }

  /** SIGTERM, then SIGKILL after {@code grace}; data and ports are kept. */
  public synchronized void stop(Duration grace) {
    if (!isRunning()) {
      return;
    }
    Signals.send(process.pid(), "CONT"); // a paused etcd would not act on SIGTERM
    process.destroy();
    if (!waitForExit(grace)) {
      log.warn("etcd pid {} ignored SIGTERM for {}; killing it", process.pid(), grace);
      process.destroyForcibly();
      waitForExit(KILL_WAIT);
    }
  }

  /** SIGKILL at once; data and ports are kept. */
  public synchronized void kill() {
    if (isRunning()) {
      process.destroyForcibly();
      waitForExit(KILL_WAIT);
    }
  }

  /** Sends SIG{@code name} (STOP, CONT, ...) to the running etcd; false when it is not running. */
  public synchronized boolean signal(String name) {
    return isRunning() && Signals.send(process.pid(), name);
  }

  /** The last {@code lines} lines of etcd's log, for error messages. */
  public String logTail(int lines) {
    try {
      List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException | UncheckedIOException e) {
      return "(no log: " + e + ")";
    }
  }

  /**
   * Waits until the launched etcd's /health says true; throws when it exits or does not within the
   * start timeout.
   */
  public void awaitHealthy() {
    Process process;
    synchronized (this) {
      process = this.process;
    }
    if (process == null) {
      throw new LaunchException("etcd was not launched");
    }
    awaitHealthy(process);
    log.info("etcd pid {} healthy at {} (data {})", process.pid(), endpoint(), dataDir);
  }

  private void awaitHealthy(Process process) {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    String last = "no answer yet";
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new LaunchException(
            "etcd exited with code "
                + process.exitValue()
                + " while starting (is another etcd using "
                + dataDir
                + " or its ports?); end of "
                + logFile
                + ":\n"
                + logTail(30));
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
    throw new LaunchException(
        "etcd at "
            + endpoint()
            + " not healthy within "
            + START_TIMEOUT.toSeconds()
            + " s (last: "
            + last
            + "); end of "
            + logFile
            + ":\n"
            + logTail(30));
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
      throw new LaunchException("interrupted while waiting for etcd", e);
    }
  }
}
