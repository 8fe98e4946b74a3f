package dev.paramserver.localcluster;

import dev.paramserver.launcher.EtcdProcess;
import dev.paramserver.launcher.Signals;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;

/**
 * A real etcd plus K masters, N pservers and M trainers as separate processes on 127.0.0.1, the way
 * compose or Kubernetes would run them: each on free ports, logging to {@code
 * <runDir>/logs/<role>-<index>.log}, restarted when it dies unexpectedly, listed in {@code
 * <runDir>/cluster.json}. Fault tests drive it through {@link #kill}, {@link #stop}, {@link
 * #pauseProcess}, {@link #stopEtcd} and read the job through {@link #masterStatus()}.
 *
 * <p>{@link #close()} (also run by a JVM shutdown hook) stops trainers, then masters, then
 * pservers, then etcd, each group with SIGTERM and a grace period, then SIGKILL: no process is left
 * behind.
 */
public final class LocalCluster implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LocalCluster.class);

  private final ClusterSpec spec;
  private final Supervisor supervisor;
  private final EtcdProcess etcd;
  private final LocalEtcd localEtcd;
  private final LeaderStatus leader;
  private final LocalAdminClient admin;
  private final Thread shutdownHook;

  /** Prepares the run folder and ports; nothing runs until {@link #start()}. */
  public LocalCluster(ClusterSpec spec) {
    this.spec = spec;
    Path runDir = spec.runDir();
    try {
      Files.createDirectories(runDir.resolve("logs"));
      Files.createDirectories(runDir.resolve("checkpoints"));
      LocalEtcd.removeEarlierData(runDir.resolve("etcd"));
    } catch (IOException e) {
      throw new UncheckedIOException("could not prepare run folder " + runDir, e);
    }
    this.admin = new LocalAdminClient(spec.adminToken());
    this.supervisor = new Supervisor(spec, new PortAllocator(), this::jobEndedNow);
    this.etcd = supervisor.etcd();
    this.localEtcd = new LocalEtcd(spec, supervisor);
    this.leader = new LeaderStatus(supervisor, admin);
    this.shutdownHook = new Thread(this::close, "local-cluster-shutdown");
    supervisor.writeClusterFile();
  }

  /**
   * Starts etcd and launches every master, pserver and trainer at once (while etcd starts, when
   * their start-up archives are ready; else once it serves, after making them), then waits (up to
   * the spec's start timeout) until each listens on its HTTP port. On failure everything started so
   * far is stopped.
   */
  public void start() {
    if (!supervisor.beginStart()) {
      throw new IllegalStateException("a LocalCluster starts once; create a new one");
    }
    Runtime.getRuntime().addShutdownHook(shutdownHook);
    try {
      boolean java = spec.command() == ServiceCommand.javaServices();
      boolean archives = spec.classDataSharing() && java;
      localEtcd.start(
          java && (!archives || JavaServiceCommand.archivesReady(spec)),
          () -> {
            if (archives) {
              JavaServiceCommand.prepareArchives(spec, etcd.endpoint());
            }
            supervisor.launchAll(List.of(Role.MASTER, Role.PSERVER, Role.TRAINER, Role.SERVING));
          });
      supervisor.startProbing();
      awaitAllRunning(spec.startTimeout());
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    }
  }

  /**
   * Makes the class-data archives the services of {@code spec} start from (see {@link
   * ClassDataArchives}), as {@link #start} does first, so that their one-time cost stays out of a
   * start that is timed. Starts an etcd of its own for the archives' training runs only when one is
   * missing, and stops it again.
   */
  public static void prepareClassData(ClusterSpec spec) {
    if (!spec.classDataSharing() || JavaServiceCommand.archivesReady(spec)) {
      return;
    }
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.localEtcd.startProcess();
      JavaServiceCommand.prepareArchives(spec, cluster.etcd.endpoint());
    }
  }

  /** Snapshots of every process, masters first, then pservers, then trainers. */
  public List<ProcessInfo> processes() {
    return supervisor.processes();
  }

  /** The snapshot of one process. */
  public ProcessInfo process(Role role, int index) {
    return supervisor.slot(role, index).info();
  }

  /**
   * Kills the process at once (SIGKILL) and waits until it is gone; the watchdog restarts it.
   * Returns the snapshot of the killed incarnation.
   */
  public ProcessInfo kill(Role role, int index) {
    return kill(role, index, true);
  }

  /** Kills the process at once (SIGKILL); with {@code restart=false} it stays STOPPED. */
  public ProcessInfo kill(Role role, int index, boolean restart) {
    ServiceProcess sp = supervisor.slot(role, index);
    ProcessInfo before = sp.info();
    Process p = sp.process();
    if (p == null || !p.isAlive()) {
      throw new IllegalStateException("cannot kill " + sp.name() + ": it is " + sp.state());
    }
    if (!restart) {
      sp.intent(ServiceProcess.Intent.STOP);
    }
    p.destroyForcibly();
    GracefulStop.waitFor(p, Duration.ofSeconds(10).toNanos());
    if (!p.isAlive()) {
      supervisor.onExit(
          sp, p); // act now, so the state says RESTARTING or STOPPED when kill returns
      // the supervisor's own exit handler may have claimed the exit first: wait until it is done
      long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      while (sp.state() == ProcessState.RUNNING && System.nanoTime() < deadline) {
        sleep(Duration.ofMillis(10));
      }
    }
    return before;
  }

  /**
   * Stops the process gracefully (SIGTERM, SIGKILL after the stop timeout); it is not restarted.
   * Returns its exit code, or -1 when it was not running.
   */
  public int stop(Role role, int index) {
    ServiceProcess sp = supervisor.slot(role, index);
    Process p = sp.process();
    if (p == null || !p.isAlive()) {
      supervisor.markStopped(sp, p);
      return -1;
    }
    GracefulStop.stopAll(List.of(sp), spec.stopTimeout());
    supervisor.markStopped(sp, p);
    return p.exitValue();
  }

  /**
   * Stops the process gracefully if it runs, then launches it again (on the same ports when they
   * are free). Also brings back a STOPPED, FINISHED or FAILED process.
   */
  public ProcessInfo restart(Role role, int index) {
    ServiceProcess sp = supervisor.slot(role, index);
    stop(role, index);
    supervisor.launchAgain(sp);
    return sp.info();
  }

  /**
   * Launches one more process of the role (for elastic trainers) and returns its snapshot; it is
   * not awaited.
   */
  public ProcessInfo addProcess(Role role) {
    return supervisor.add(role).info();
  }

  /**
   * Asks the process to shut down through {@code POST /admin/shutdown} (as an operator would); it
   * is not restarted. Returns at once; use {@link #awaitState} to wait for STOPPED.
   */
  public void shutdownViaAdmin(Role role, int index) throws IOException {
    ServiceProcess sp = supervisor.slot(role, index);
    requireAlive(sp, "shut down");
    sp.intent(ServiceProcess.Intent.STOP);
    try {
      admin.shutdown(sp.httpPort());
    } catch (IOException e) {
      sp.intent(ServiceProcess.Intent.NONE);
      throw e;
    }
  }

  /** Whether the process's actuator readiness probe answers 200 (UP) now. */
  public boolean isReady(Role role, int index) {
    ServiceProcess sp = supervisor.slot(role, index);
    return sp.isAlive() && admin.ready(sp.httpPort());
  }

  /**
   * Waits until the process's readiness probe answers 200 (for example a pserver whose shard is
   * initialised, or the leading master).
   *
   * @throws LocalClusterException on timeout
   */
  public ProcessInfo awaitReady(Role role, int index, Duration timeout) {
    ServiceProcess sp = supervisor.slot(role, index);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!isReady(role, index)) {
      if (System.nanoTime() > deadline) {
        throw new LocalClusterException(
            sp.name()
                + " not ready within "
                + timeout
                + ": "
                + sp.info()
                + "; see "
                + sp.info().log());
      }
      sleep(Supervisor.POLL);
    }
    return sp.info();
  }

  /** Freezes the process with SIGSTOP (it keeps its sockets, answers nothing). */
  public void pauseProcess(Role role, int index) {
    ServiceProcess sp = supervisor.slot(role, index);
    long pid = requireAlive(sp, "pause");
    if (!Signals.send(pid, "STOP")) {
      throw new LocalClusterException("kill -STOP " + pid + " (" + sp.name() + ") failed");
    }
    sp.state(ProcessState.PAUSED);
    supervisor.emit(
        ClusterEvent.Type.PAUSED, sp.name(), pid, sp.name() + " (pid " + pid + ") paused");
    supervisor.writeClusterFile();
  }

  /** Lets a paused process run again with SIGCONT. */
  public void resume(Role role, int index) {
    ServiceProcess sp = supervisor.slot(role, index);
    long pid = requireAlive(sp, "resume");
    if (!Signals.send(pid, "CONT")) {
      throw new LocalClusterException("kill -CONT " + pid + " (" + sp.name() + ") failed");
    }
    sp.state(spec.probeHttp() ? ProcessState.STARTING : ProcessState.RUNNING);
    supervisor.emit(
        ClusterEvent.Type.RESUMED, sp.name(), pid, sp.name() + " (pid " + pid + ") resumed");
    supervisor.writeClusterFile();
  }

  /** Stops etcd gracefully, keeping its ports and data for {@link #startEtcd()}. */
  public void stopEtcd() {
    localEtcd.stop();
  }

  /** Kills etcd at once (SIGKILL), keeping its ports and data for {@link #startEtcd()}. */
  public void killEtcd() {
    localEtcd.kill();
  }

  /**
   * Freezes etcd with SIGSTOP: its connections stay open and nothing answers, as a hung etcd (the
   * leases it holds end when it runs again, since their time ran on).
   */
  public void pauseEtcd() {
    localEtcd.pause();
  }

  /** Lets a paused etcd run again with SIGCONT. */
  public void resumeEtcd() {
    localEtcd.resume();
  }

  /** Starts etcd again on the same ports with the same data and waits until it is healthy. */
  public void startEtcd() {
    localEtcd.restart();
  }

  /** The pid of etcd, or -1 when it is not running. */
  public long etcdPid() {
    return etcd.pid();
  }

  /** The etcd client URL, {@code http://127.0.0.1:PORT}. */
  public String etcdEndpoint() {
    return etcd.endpoint();
  }

  public String adminToken() {
    return spec.adminToken();
  }

  public ClusterSpec spec() {
    return spec;
  }

  /** The cluster.json file in the run folder. */
  public Path clusterFile() {
    return supervisor.clusterFile().path();
  }

  /** Calls {@code listener} for every later supervision event (from the watchdog thread). */
  public void addListener(Consumer<ClusterEvent> listener) {
    supervisor.addListener(listener);
  }

  /**
   * The {@code /admin/status} JSON of the master that answers as leader.
   *
   * @throws LocalClusterException naming what each master answered when none is the leader
   */
  public JsonNode masterStatus() {
    return leader.status();
  }

  /** The leader's status, or empty when no master answers as leader right now. */
  public Optional<JsonNode> tryMasterStatus() {
    try {
      return Optional.of(masterStatus());
    } catch (LocalClusterException e) {
      return Optional.empty();
    }
  }

  /** The job as the leader reports it, or empty when no leader answers. */
  public Optional<JobStatusView> jobStatus() {
    return leader.job();
  }

  /** The {@code /admin/status} JSON of any service process. */
  public JsonNode adminStatus(Role role, int index) throws IOException {
    return admin.status(supervisor.slot(role, index).httpPort());
  }

  /**
   * Waits until the job is FINISHED or FAILED and returns its status; afterwards trainers that exit
   * with code 0 are not restarted.
   *
   * @throws LocalClusterException on timeout (with the last status seen)
   */
  public JobStatusView awaitJobEnd(Duration timeout) {
    JobStatusView end = awaitJob(s -> s.isFinished() || s.isFailed(), timeout);
    supervisor.markJobEnded();
    return end;
  }

  /**
   * Polls the leader until {@code condition} holds on the job status.
   *
   * @throws LocalClusterException on timeout (with the last status seen)
   */
  public JobStatusView awaitJob(Predicate<JobStatusView> condition, Duration timeout) {
    return leader.awaitJob(condition, timeout);
  }

  /**
   * Waits until the process is in {@code state}.
   *
   * @throws LocalClusterException on timeout
   */
  public ProcessInfo awaitState(Role role, int index, ProcessState state, Duration timeout) {
    ServiceProcess sp = supervisor.slot(role, index);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (sp.state() != state) {
      if (System.nanoTime() > deadline) {
        throw new LocalClusterException(
            sp.name() + " did not reach " + state + " within " + timeout + ": " + sp.info());
      }
      sleep(Duration.ofMillis(50));
    }
    return sp.info();
  }

  /** Tells the supervisor that the job is over: trainers exiting with 0 stay FINISHED. */
  public void markJobEnded() {
    supervisor.markJobEnded();
  }

  /**
   * Stops everything: serving replicas, trainers, then masters, then pservers, then etcd; each
   * group gets SIGTERM and the stop timeout, then SIGKILL. Idempotent; also run by the JVM shutdown
   * hook.
   */
  @Override
  public void close() {
    if (!supervisor.beginClose()) {
      return;
    }
    if (Thread.currentThread() == shutdownHook) {
      log.warn("JVM shutting down: stopping the local cluster in {}", spec.runDir());
    }
    try {
      if (Thread.currentThread() != shutdownHook && supervisor.isStarted()) {
        Runtime.getRuntime().removeShutdownHook(shutdownHook);
      }
    } catch (IllegalStateException e) {
      // the JVM is already shutting down: the hook runs (or ran) this method
    }
    if (Thread.currentThread() != shutdownHook && supervisor.isStarted() && jobEndedNow()) {
      awaitTrainersEnding(spec.stopTimeout());
    }
    for (Role role : List.of(Role.SERVING, Role.TRAINER, Role.MASTER, Role.PSERVER)) {
      List<ServiceProcess> group = supervisor.group(role);
      List<String> killed = GracefulStop.stopAll(group, spec.stopTimeout());
      if (!killed.isEmpty()) {
        log.warn("killed {} after {} without exiting", killed, spec.stopTimeout());
      }
      group.forEach(sp -> supervisor.markStopped(sp, sp.process()));
    }
    etcd.stop(spec.stopTimeout());
    supervisor.shutdownThreads();
    supervisor.writeClusterFile();
    log.info("local cluster {} stopped", spec.runDir());
  }

  /**
   * Once the job has ended, a trainer still running (one restarted after a crash that was still
   * joining when the last pass ended) learns that from the master and exits 0 on its own: it is
   * given up to {@code grace} to do so before it is stopped, so that every trainer of a finished
   * job ends with exit code 0.
   */
  private void awaitTrainersEnding(Duration grace) {
    long deadline = System.nanoTime() + grace.toNanos();
    for (ServiceProcess sp : supervisor.group(Role.TRAINER)) {
      Process p = sp.process();
      long left = deadline - System.nanoTime();
      if (p == null || left <= 0) {
        continue;
      }
      try {
        if (!p.waitFor(left, TimeUnit.NANOSECONDS)) {
          log.info("{} still running {} after the job ended: stopping it", sp.name(), grace);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** Whether the leader reports the job FINISHED or FAILED right now. */
  private boolean jobEndedNow() {
    Optional<JobStatusView> status = jobStatus();
    return status.map(s -> s.isFinished() || s.isFailed()).orElse(false);
  }

  private void awaitAllRunning(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      List<String> waiting = new ArrayList<>();
      for (ProcessInfo p : processes()) {
        if (p.state() == ProcessState.FAILED) {
          throw new LocalClusterException(
              p.name() + " failed to start (exited " + p.restarts() + " times); see " + p.log());
        }
        if (p.state() != ProcessState.RUNNING && p.state() != ProcessState.FINISHED) {
          waiting.add(p.name() + " " + p.state());
        }
      }
      if (waiting.isEmpty()) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new LocalClusterException(
            "not all processes listen on their HTTP port within "
                + timeout.toSeconds()
                + " s: "
                + waiting
                + "; see the logs in "
                + spec.runDir().resolve("logs"));
      }
      sleep(Supervisor.POLL);
    }
  }

  private long requireAlive(ServiceProcess sp, String what) {
    Process p = sp.process();
    if (p == null || !p.isAlive()) {
      throw new IllegalStateException("cannot " + what + " " + sp.name() + ": it is " + sp.state());
    }
    return p.pid();
  }

  private static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LocalClusterException("interrupted while waiting on the local cluster", e);
    }
  }
}
