package dev.paramserver.testsupport;

import dev.paramserver.launcher.EtcdProcess;
import dev.paramserver.launcher.Launcher;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node etcd process on 127.0.0.1, on free client and peer ports, with a temporary
 * data directory, for integration tests: an {@link EtcdProcess} (the launcher the local cluster
 * uses) plus the ports, the directory and the cleanup a test needs.
 *
 * <p>The binary is {@code $ETCD_BIN}, else {@code etcd} on the PATH, else {@code /usr/bin/etcd}.
 * Its output goes to {@code etcd.log} in the temp directory ({@link #logFile()}). Ports and data
 * survive {@link #kill()}, {@link #terminate()} and {@link #restart()}, so fault tests can stop
 * etcd and bring the same cluster back; {@link #stop()} (or {@link #close()}) ends it for good and
 * deletes the directory. A JVM shutdown hook stops every server still running, and etcd gets
 * SIGTERM from the kernel if the test JVM dies without running it.
 */
public final class EtcdServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EtcdServer.class);
  private static final Duration STOP_GRACE = Duration.ofSeconds(5);
  private static final Set<EtcdServer> LIVE = ConcurrentHashMap.newKeySet();
  private static final Launcher LAUNCHER = new Launcher();

  static {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> List.copyOf(LIVE).forEach(EtcdServer::stop), "etcd-server-cleanup"));
  }

  private final Path dir;
  private final EtcdProcess etcd;
  private boolean stopped;

  private EtcdServer(String binary, IntSupplier ports) {
    int clientPort = ports.getAsInt();
    int peerPort = ports.getAsInt();
    while (peerPort == clientPort) {
      peerPort = ports.getAsInt();
    }
    this.dir = TempDirs.create("etcd");
    this.etcd =
        new EtcdProcess(
            LAUNCHER, binary, clientPort, peerPort, dir.resolve("data"), dir.resolve("etcd.log"));
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
    String binary = EtcdProcess.findBinary();
    for (int attempt = 1; ; attempt++) {
      EtcdServer server = new EtcdServer(binary, ports);
      LIVE.add(server);
      try {
        server.etcd.start();
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
    return etcd.endpoint();
  }

  public int clientPort() {
    return etcd.clientPort();
  }

  public Path dataDir() {
    return etcd.dataDir();
  }

  public Path logFile() {
    return etcd.logFile();
  }

  /** The process id of the running etcd. */
  public synchronized long pid() {
    requireRunning("pid");
    return etcd.pid();
  }

  public synchronized boolean isRunning() {
    return etcd.isRunning();
  }

  /** Freezes etcd (SIGSTOP): connections stay open but nothing answers, like a hung server. */
  public synchronized void pause() {
    signal("STOP");
  }

  /** Lets a paused etcd run again (SIGCONT). */
  public synchronized void resume() {
    signal("CONT");
  }

  /** Kills etcd at once (SIGKILL); data and ports are kept for {@link #restart()}. */
  public synchronized void kill() {
    etcd.kill();
  }

  /** Stops etcd with SIGTERM (SIGKILL after a grace period); data and ports are kept. */
  public synchronized void terminate() {
    etcd.stop(STOP_GRACE);
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
    etcd.start();
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
    return etcd.logTail(lines);
  }

  private void signal(String name) {
    requireRunning("send SIG" + name);
    if (!etcd.signal(name)) {
      throw new IllegalStateException("kill -" + name + " " + etcd.pid() + " failed");
    }
  }

  private void requireRunning(String what) {
    if (!isRunning()) {
      throw new IllegalStateException("cannot " + what + ": etcd is not running");
    }
  }
}
