package dev.paramserver.localcluster;

import dev.paramserver.launcher.EtcdProcess;
import dev.paramserver.launcher.LaunchException;
import dev.paramserver.launcher.Signals;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link LocalCluster}'s etcd under fault tests: stop, kill, pause, resume and start again on
 * the same ports with the same data, each told to the supervisor's listeners and written to {@code
 * cluster.json}.
 */
final class LocalEtcd {
  private static final Logger log = LoggerFactory.getLogger(LocalEtcd.class);

  private final ClusterSpec spec;
  private final Supervisor supervisor;
  private final EtcdProcess etcd;

  LocalEtcd(ClusterSpec spec, Supervisor supervisor) {
    this.spec = spec;
    this.supervisor = supervisor;
    this.etcd = supervisor.etcd();
  }

  void stop() {
    long pid = etcd.pid();
    etcd.stop(spec.stopTimeout());
    supervisor.emit(ClusterEvent.Type.ETCD_STOPPED, "etcd", pid, "etcd (pid " + pid + ") stopped");
    supervisor.writeClusterFile();
  }

  void kill() {
    long pid = etcd.pid();
    etcd.kill();
    supervisor.emit(ClusterEvent.Type.ETCD_STOPPED, "etcd", pid, "etcd (pid " + pid + ") killed");
    supervisor.writeClusterFile();
  }

  void pause() {
    long pid = etcd.pid();
    if (pid < 0 || !Signals.send(pid, "STOP")) {
      throw new LocalClusterException("kill -STOP " + pid + " (etcd) failed");
    }
    supervisor.emit(ClusterEvent.Type.PAUSED, "etcd", pid, "etcd (pid " + pid + ") paused");
  }

  void resume() {
    long pid = etcd.pid();
    if (pid < 0 || !Signals.send(pid, "CONT")) {
      throw new LocalClusterException("kill -CONT " + pid + " (etcd) failed");
    }
    supervisor.emit(ClusterEvent.Type.RESUMED, "etcd", pid, "etcd (pid " + pid + ") resumed");
  }

  /** Starts etcd again while the cluster runs, and tells it. */
  void restart() {
    synchronized (supervisor.lifecycle()) {
      supervisor.requireRunning("start etcd");
      startProcess();
    }
    emitStarted();
    supervisor.writeClusterFile();
  }

  /**
   * Starts etcd and runs {@code launch} (the services' launches): while etcd starts when {@code
   * concurrently} (its endpoint is known already; a JVM needs seconds before it asks etcd anything
   * and waits for it if asked sooner, while etcd takes up to a second to serve from an empty data
   * directory), else once etcd serves.
   */
  void start(boolean concurrently, Runnable launch) {
    if (concurrently) {
      launchProcess();
      launch.run();
      awaitHealthy();
      emitStarted();
    } else {
      startProcess();
      emitStarted();
      launch.run();
    }
  }

  private void emitStarted() {
    supervisor.emit(
        ClusterEvent.Type.ETCD_STARTED, "etcd", etcd.pid(), "etcd up at " + etcd.endpoint());
  }

  /** Starts the etcd process and waits until it is healthy. */
  void startProcess() {
    launchProcess();
    awaitHealthy();
  }

  /** Starts the etcd process without waiting for it ({@link #awaitHealthy} does). */
  void launchProcess() {
    try {
      etcd.launch();
    } catch (LaunchException e) {
      throw new LocalClusterException(e.getMessage(), e);
    }
  }

  /** Waits until the launched etcd is healthy. */
  void awaitHealthy() {
    try {
      etcd.awaitHealthy();
    } catch (LaunchException e) {
      throw new LocalClusterException(e.getMessage(), e);
    }
  }

  /**
   * A new cluster starts from an empty etcd: the state of an earlier run in the same folder (a
   * finished job, pserver checkpoint metadata) would otherwise leak into this one. Only a directory
   * that holds etcd's {@code member/} is removed.
   */
  static void removeEarlierData(Path dataDir) throws IOException {
    if (!Files.isDirectory(dataDir.resolve("member"))) {
      return;
    }
    log.info("removing the etcd data of an earlier run in {}", dataDir);
    try (var paths = Files.walk(dataDir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
