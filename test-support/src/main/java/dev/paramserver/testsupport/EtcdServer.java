package dev.paramserver.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node etcd process on 127.0.0.1, on free client and peer ports, with a temporary
 * data directory, for integration tests.
 *
 * <p>The binary is {@code $ETCD_BIN}, else {@code etcd} on the PATH, else {@code /usr/bin/etcd}.
 * Its output goes to {@code etcd.log} in the temp directory ({@link #logFile()}). Ports and data
 * survive {@link #kill()}, {@link #terminate()} and {@link #restart()}, so fault tests can stop
 * etcd and bring the same cluster back; {@link #stop()} (or {@link #close()}) ends it for good and
 * deletes the directory. A JVM shutdown hook stops every server still running.
 */
public final class EtcdServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EtcdServer.class);
  private static final Duration START_TIMEOUT = Duration.ofSeconds(15);
  private static final Duration STOP_GRACE = Duration.ofSeconds(5);
  private static final Set<EtcdServer> LIVE = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> List.copyOf(LIVE).forEach(EtcdServer::stop), "etcd-server-cleanup"));
  }

  private final String binary;
  private final int clientPort;
  private final int peerPort;
  private final Path dir;
  private final Path logFile;
  private Process process;
  private boolean paused;
  private boolean stopped;

  private EtcdServer(String binary, IntSupplier ports) {
    this.binary = binary;
    this.clientPort = ports.getAsInt();
    int peer = ports.getAsInt();
    while (peer == clientPort) {
      peer = ports.getAsInt();
    }
    this.peerPort = peer;
    this.dir = TempDirs.create("etcd");
    this.logFile = dir.resolve("etcd.log");
  }

  /**
   * Starts a new etcd and waits until it reports healthy. If another process grabbed one of the
   * free ports in the meantime, tries again with new ports (up to 3 times).
   */
  public static EtcdServer start() {
    return start(FreePorts::next);
  }

  /** {@link #start()} taking its ports from {@code ports}. */
  static EtcdServer start(IntSupplier ports) {
    String binary = findBinary();
    for (int attempt = 1; ; attempt++) {
      EtcdServer server = new EtcdServer(binary, ports);
      LIVE.add(server);
      try {
        server.startProcess();
        return server;
      } catch (RuntimeException | Error e) {
        boolean portTaken = server.logTail(50).contains("address already in use");
        server.stop();
        if (!portTaken || attempt >= 3) {
          throw e;
        }
        log.warn("etcd port was taken by another process, retrying with new ports");
      }
    }
  }

  /** The client URL, {@code http://127.0.0.1:PORT}. */
  public String endpoint() {
    return "http://127.0.0.1:" + clientPort;
  }

  public int clientPort() {
    return clientPort;
  }

  public Path dataDir() {
    return dir.resolve("data");
  }

  public Path logFile() {
    return logFile;
  }

  /** The process id of the running etcd. */
  public synchronized long pid() {
    requireRunning("pid");
    return process.pid();
  }

  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Freezes etcd (SIGSTOP): connections stay open but nothing answers, like a hung server. */
  public synchronized void pause() {
    requireRunning("pause");
    signal("STOP");
    paused = true;
  }

  /** Lets a paused etcd run again (SIGCONT). */
  public synchronized void resume() {
    requireRunning("resume");
    signal("CONT");
    paused = false;
  }

  /** Kills etcd at once (SIGKILL); data and ports are kept for {@link #restart()}. */
  public synchronized void kill() {
    if (isRunning()) {
      process.destroyForcibly();
      waitForExit(STOP_GRACE);
    }
    paused = false;
  }

  /** Stops etcd with SIGTERM (SIGKILL after a grace period); data and ports are kept. */
  public synchronized void terminate() {
    if (!isRunning()) {
      return;
    }
    if (paused) {
      signal("CONT"); // a stopped process would not act on SIGTERM
      paused = false;
    }
    process.destroy();
    if (!waitForExit(STOP_GRACE)) {
      log.warn("etcd pid {} ignored SIGTERM for {}, killing it", process.pid(), STOP_GRACE);
      process.destroyForcibly();
      waitForExit(STOP_GRACE);
    }
  }

  /**
   * Starts etcd again on the same ports with the same data (after {@link #kill()} or {@link
   * #terminate()}); terminates it first if it is running. Waits until healthy.
   */
  public synchronized void restart() {
    if (stopped) {
      throw new IllegalStateException("etcd was stopped for good; start a new EtcdServer");
    }
    terminate();
    startProcess();
  }

  /** Stops etcd for good and deletes its directory. Idempotent. */
  public synchronized void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    try {
      terminate();
    } finally {
      LIVE.remove(this);
      TempDirs.deleteRecursively(dir);
    }
  }

  @Override
  public void close() {
    stop();
  }

  /** The last lines of etcd's log, for error messages. */
  public String logTail(int lines) {
    try {
      List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException | UncheckedIOException e) {
      return "(no log: " + e + ")";
    }
  }

  private void startProcess() {
    String client = "http://127.0.0.1:" + clientPort;
    String peer = "http://127.0.0.1:" + peerPort;
    List<String> cmd = new ArrayList<>();
    cmd.addAll(
        List.of(
            binary,
            "--name",
            "n1",
            "--data-dir",
            dataDir().toString(),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            "n1=" + peer));
    ProcessBuilder builder =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new IllegalStateException(
          "could not start etcd '" + binary + "': " + e.getMessage(), e);
    }
    paused = false;
    awaitHealthy();
    log.info("etcd pid {} healthy at {} (dir {})", process.pid(), client, dir);
  }

  private void awaitHealthy() {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    String last = "no answer yet";
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "etcd exited with code "
                + process.exitValue()
                + " while starting; log tail:\n"
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
    throw new IllegalStateException(
        "etcd at "
            + endpoint()
            + " not healthy within "
            + START_TIMEOUT
            + " (last: "
            + last
            + "); log tail:\n"
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

  private void signal(String name) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).start();
      if (!kill.waitFor(5, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not run kill -" + name, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while sending SIG" + name + " to etcd", e);
    }
  }

  private void requireRunning(String what) {
    if (!isRunning()) {
      throw new IllegalStateException("cannot " + what + ": etcd is not running");
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for etcd", e);
    }
  }

  static String findBinary() {
    String env = System.getenv("ETCD_BIN");
    if (env != null && !env.isBlank()) {
      if (Files.isExecutable(Path.of(env))) {
        return env;
      }
      throw new IllegalStateException("ETCD_BIN=" + env + " is not an executable file");
    }
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(java.io.File.pathSeparator)) {
        if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "etcd"))) {
          return Path.of(dir, "etcd").toString();
        }
      }
    }
    if (Files.isExecutable(Path.of("/usr/bin/etcd"))) {
      return "/usr/bin/etcd";
    }
    throw new IllegalStateException(
        "etcd not found: install Debian's etcd-server (apt-get install -y etcd-server) or set"
            + " ETCD_BIN");
  }
}
