package dev.paramserver.localcluster;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
  private static final Duration POLL = Duration.ofMillis(250);

  private final ClusterSpec spec;
  private final PortAllocator ports = new PortAllocator();
  private final Launcher launcher = new Launcher();
  private final EtcdProcess etcd;
  private final Map<Role, List<ServiceProcess>> slots = new EnumMap<>(Role.class);
  private final ClusterFile clusterFile;
  private final AdminClient admin;
  private final ScheduledExecutorService watchdog;
  private final List<Consumer<ClusterEvent>> listeners = new CopyOnWriteArrayList<>();
  private final Object lifecycle = new Object();
  private final Thread shutdownHook;
  private volatile boolean started;
  private volatile boolean closing;
  private volatile boolean jobEnded;

  /** Prepares the run folder and ports; nothing runs until {@link #start()}. */
  public LocalCluster(ClusterSpec spec) {
    this.spec = spec;
    Path runDir = spec.runDir();
    try {
      Files.createDirectories(runDir.resolve("logs"));
      Files.createDirectories(runDir.resolve("checkpoints"));
    } catch (IOException e) {
      throw new UncheckedIOException("could not create run folder " + runDir, e);
    }
    this.etcd =
        new EtcdProcess(
            launcher,
            spec.etcdBinary(),
            ports.next(),
            ports.next(),
            runDir.resolve("etcd"),
            runDir.resolve("logs").resolve("etcd.log"));
    for (Role role : Role.values()) {
      List<ServiceProcess> list = new CopyOnWriteArrayList<>();
      for (int i = 0; i < spec.count(role); i++) {
        list.add(newSlot(role, i));
      }
      slots.put(role, list);
    }
    this.clusterFile = new ClusterFile(runDir);
    this.admin = new AdminClient(spec.adminToken());
    this.watchdog =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "local-cluster-watchdog");
              t.setDaemon(true);
              return t;
            });
    this.shutdownHook = new Thread(this::close, "local-cluster-shutdown");
    writeClusterFile();
  }

  /**
   * Starts etcd and waits until it is healthy, then launches every master, pserver and trainer at
   * once and waits (up to the spec's start timeout) until each listens on its HTTP port. On failure
   * everything started so far is stopped.
   */
  public void start() {
    synchronized (lifecycle) {
      if (started || closing) {
        throw new IllegalStateException("a LocalCluster starts once; create a new one");
      }
      started = true;
      Runtime.getRuntime().addShutdownHook(shutdownHook);
    }
    try {
      etcd.start();
      emit(ClusterEvent.Type.ETCD_STARTED, "etcd", etcd.pid(), "etcd up at " + etcd.endpoint());
      watchdog.scheduleWithFixedDelay(
          this::probeStarting, POLL.toMillis(), POLL.toMillis(), TimeUnit.MILLISECONDS);
      synchronized (lifecycle) {
        requireRunning("start");
        for (Role role : List.of(Role.MASTER, Role.PSERVER, Role.TRAINER)) {
          for (ServiceProcess sp : slots.get(role)) {
            launch(sp);
          }
        }
      }
      awaitAllRunning(spec.startTimeout());
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    }
  }

  /** Snapshots of every process, masters first, then pservers, then trainers. */
  public List<ProcessInfo> processes() {
    List<ProcessInfo> list = new ArrayList<>();
    for (Role role : Role.values()) {
      slots.get(role).forEach(sp -> list.add(sp.info()));
    }
    return list;
  }

  /** The snapshot of one process. */
  public ProcessInfo process(Role role, int index) {
    return slot(role, index).info();
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
    ServiceProcess sp = slot(role, index);
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
      onExit(sp, p); // act now, so the state says RESTARTING or STOPPED when kill returns
    }
    return before;
  }

  /**
   * Stops the process gracefully (SIGTERM, SIGKILL after the stop timeout); it is not restarted.
   * Returns its exit code, or -1 when it was not running.
   */
  public int stop(Role role, int index) {
    ServiceProcess sp = slot(role, index);
    Process p = sp.process();
    if (p == null || !p.isAlive()) {
      markStopped(sp, p);
      return -1;
    }
    GracefulStop.stopAll(List.of(sp), spec.stopTimeout());
    markStopped(sp, p);
    return p.exitValue();
  }

  /**
   * Stops the process gracefully if it runs, then launches it again (on the same ports when they
   * are free). Also brings back a STOPPED, FINISHED or FAILED process.
   */
  public ProcessInfo restart(Role role, int index) {
    ServiceProcess sp = slot(role, index);
    stop(role, index);
    synchronized (lifecycle) {
      requireRunning("restart " + sp.name());
      launch(sp);
    }
    return sp.info();
  }

  /**
   * Launches one more process of the role (for elastic trainers) and returns its snapshot; it is
   * not awaited.
   */
  public ProcessInfo addProcess(Role role) {
    synchronized (lifecycle) {
      requireRunning("add a " + role.id());
      List<ServiceProcess> list = slots.get(role);
      ServiceProcess sp = newSlot(role, list.size());
      list.add(sp);
      launch(sp);
      return sp.info();
    }
  }

  /**
   * Asks the process to shut down through {@code POST /admin/shutdown} (as an operator would); it
   * is not restarted. Returns at once; use {@link #awaitState} to wait for STOPPED.
   */
  public void shutdownViaAdmin(Role role, int index) throws IOException {
    ServiceProcess sp = slot(role, index);
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
    ServiceProcess sp = slot(role, index);
    return sp.isAlive() && admin.ready(sp.httpPort());
  }

  /**
   * Waits until the process's readiness probe answers 200 (for example a pserver whose shard is
   * initialised, or the leading master).
   *
   * @throws LocalClusterException on timeout
   */
  public ProcessInfo awaitReady(Role role, int index, Duration timeout) {
    ServiceProcess sp = slot(role, index);
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
      sleep(POLL);
    }
    return sp.info();
  }

  /** Freezes the process with SIGSTOP (it keeps its sockets, answers nothing). */
  public void pauseProcess(Role role, int index) {
    ServiceProcess sp = slot(role, index);
    long pid = requireAlive(sp, "pause");
    if (!Signals.send(pid, "STOP")) {
      throw new LocalClusterException("kill -STOP " + pid + " (" + sp.name() + ") failed");
    }
    sp.state(ProcessState.PAUSED);
    emit(ClusterEvent.Type.PAUSED, sp.name(), pid, sp.name() + " (pid " + pid + ") paused");
    writeClusterFile();
  }

  /** Lets a paused process run again with SIGCONT. */
  public void resume(Role role, int index) {
    ServiceProcess sp = slot(role, index);
    long pid = requireAlive(sp, "resume");
    if (!Signals.send(pid, "CONT")) {
      throw new LocalClusterException("kill -CONT " + pid + " (" + sp.name() + ") failed");
    }
    sp.state(spec.probeHttp() ? ProcessState.STARTING : ProcessState.RUNNING);
    emit(ClusterEvent.Type.RESUMED, sp.name(), pid, sp.name() + " (pid " + pid + ") resumed");
    writeClusterFile();
  }

  /** Stops etcd gracefully, keeping its ports and data for {@link #startEtcd()}. */
  public void stopEtcd() {
    long pid = etcd.pid();
    etcd.stop(spec.stopTimeout());
    emit(ClusterEvent.Type.ETCD_STOPPED, "etcd", pid, "etcd (pid " + pid + ") stopped");
    writeClusterFile();
  }

  /** Kills etcd at once (SIGKILL), keeping its ports and data for {@link #startEtcd()}. */
  public void killEtcd() {
    long pid = etcd.pid();
    etcd.kill();
    emit(ClusterEvent.Type.ETCD_STOPPED, "etcd", pid, "etcd (pid " + pid + ") killed");
    writeClusterFile();
  }

  /** Starts etcd again on the same ports with the same data and waits until it is healthy. */
  public void startEtcd() {
    synchronized (lifecycle) {
      requireRunning("start etcd");
      etcd.start();
    }
    emit(ClusterEvent.Type.ETCD_STARTED, "etcd", etcd.pid(), "etcd up at " + etcd.endpoint());
    writeClusterFile();
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
    return clusterFile.path();
  }

  /** Calls {@code listener} for every later supervision event (from the watchdog thread). */
  public void addListener(Consumer<ClusterEvent> listener) {
    listeners.add(listener);
  }

  /**
   * The {@code /admin/status} JSON of the master that answers as leader.
   *
   * @throws LocalClusterException naming what each master answered when none is the leader
   */
  public JsonNode masterStatus() {
    List<String> answers = new ArrayList<>();
    for (ServiceProcess sp : slots.get(Role.MASTER)) {
      if (!sp.state().isLive() || sp.state() == ProcessState.PAUSED) {
        answers.add(sp.name() + ": " + sp.state());
        continue;
      }
      try {
        JsonNode status = admin.status(sp.httpPort());
        if (status.path("leader").asBoolean(false)) {
          return status;
        }
        answers.add(sp.name() + ": state " + status.path("state").asText("?") + ", not leader");
      } catch (IOException e) {
        answers.add(sp.name() + ": " + e.getMessage());
      }
    }
    throw new LocalClusterException("no master answers as leader (" + answers + ")");
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
    return tryMasterStatus().filter(s -> s.has("job")).map(s -> new JobStatusView(s.get("job")));
  }

  /** The {@code /admin/status} JSON of any service process. */
  public JsonNode adminStatus(Role role, int index) throws IOException {
    return admin.status(slot(role, index).httpPort());
  }

  /**
   * Waits until the job is FINISHED or FAILED and returns its status; afterwards trainers that exit
   * with code 0 are not restarted.
   *
   * @throws LocalClusterException on timeout (with the last status seen)
   */
  public JobStatusView awaitJobEnd(Duration timeout) {
    JobStatusView end = awaitJob(s -> s.isFinished() || s.isFailed(), timeout);
    jobEnded = true;
    return end;
  }

  /**
   * Polls the leader until {@code condition} holds on the job status.
   *
   * @throws LocalClusterException on timeout (with the last status seen)
   */
  public JobStatusView awaitJob(Predicate<JobStatusView> condition, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "no leader answered";
    while (true) {
      Optional<JobStatusView> status = jobStatus();
      if (status.isPresent()) {
        if (status.get().isFinished() || status.get().isFailed()) {
          jobEnded = true;
        }
        if (condition.test(status.get())) {
          return status.get();
        }
        last = status.get().toString();
      }
      if (System.nanoTime() > deadline) {
        throw new LocalClusterException(
            "job condition not reached within " + timeout.toSeconds() + " s; last status: " + last);
      }
      sleep(Duration.ofMillis(500));
    }
  }

  /**
   * Waits until the process is in {@code state}.
   *
   * @throws LocalClusterException on timeout
   */
  public ProcessInfo awaitState(Role role, int index, ProcessState state, Duration timeout) {
    ServiceProcess sp = slot(role, index);
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
    jobEnded = true;
  }

  /**
   * Stops everything: trainers, then masters, then pservers, then etcd; each group gets SIGTERM and
   * the stop timeout, then SIGKILL. Idempotent; also run by the JVM shutdown hook.
   */
  @Override
  public void close() {
    synchronized (lifecycle) {
      if (closing) {
        return;
      }
      closing = true;
    }
    if (Thread.currentThread() == shutdownHook) {
      log.warn("JVM shutting down: stopping the local cluster in {}", spec.runDir());
    }
    try {
      if (Thread.currentThread() != shutdownHook && started) {
        Runtime.getRuntime().removeShutdownHook(shutdownHook);
      }
    } catch (IllegalStateException e) {
      // the JVM is already shutting down: the hook runs (or ran) this method
    }
    for (Role role : List.of(Role.TRAINER, Role.MASTER, Role.PSERVER)) {
      List<ServiceProcess> group = slots.get(role);
      List<String> killed = GracefulStop.stopAll(group, spec.stopTimeout());
      if (!killed.isEmpty()) {
        log.warn("killed {} after {} without exiting", killed, spec.stopTimeout());
      }
      group.forEach(sp -> markStopped(sp, sp.process()));
    }
    etcd.stop(spec.stopTimeout());
    watchdog.shutdownNow();
    launcher.shutdown();
    writeClusterFile();
    log.info("local cluster {} stopped", spec.runDir());
  }

  // ---- supervision ----

  private ServiceProcess newSlot(Role role, int index) {
    Path logFile = spec.runDir().resolve("logs").resolve(role.id() + "-" + index + ".log");
    return new ServiceProcess(
        role, index, logFile, ports.next(), role.hasGrpcServer() ? ports.next() : 0);
  }

  /** Launches a new incarnation of {@code sp}; callers hold {@link #lifecycle}. */
  private void launch(ServiceProcess sp) {
    int http = ports.reuseOrNext(sp.httpPort());
    int grpc = sp.role().hasGrpcServer() ? ports.reuseOrNext(sp.grpcPort()) : 0;
    List<String> command =
        spec.command()
            .build(
                new ServiceCommand.LaunchContext(
                    spec, sp.role(), sp.index(), http, grpc, etcd.endpoint()));
    Process p;
    try {
      p = sp.launch(launcher, command, spec.runDir(), http, grpc, spec.probeHttp());
    } catch (IOException e) {
      sp.state(ProcessState.FAILED);
      writeClusterFile();
      throw new LocalClusterException("could not launch " + sp.name() + ": " + e.getMessage(), e);
    }
    ProcessInfo info = sp.info();
    String what = info.restarts() == 0 ? "started" : "restarted (restart " + info.restarts() + ")";
    emit(
        info.restarts() == 0 ? ClusterEvent.Type.STARTED : ClusterEvent.Type.RESTARTED,
        sp.name(),
        p.pid(),
        String.format(
            "%s %s: pid %d, http %d%s, log %s",
            sp.name(),
            what,
            p.pid(),
            http,
            grpc > 0 ? ", grpc " + grpc : "",
            spec.runDir().relativize(info.log())));
    p.onExit().whenComplete((proc, err) -> submit(() -> onExit(sp, p)));
    writeClusterFile();
  }

  private void onExit(ServiceProcess sp, Process p) {
    int code = p.exitValue();
    if (!sp.claimExit(p, code)) {
      return; // an older incarnation, or handled already
    }
    String who = sp.name() + " (pid " + p.pid() + ")";
    if (closing || sp.intent() == ServiceProcess.Intent.STOP) {
      markStopped(sp, p);
      return;
    }
    if (sp.role() == Role.TRAINER && code == 0 && (jobEnded || jobEndedNow())) {
      sp.state(ProcessState.FINISHED);
      emit(ClusterEvent.Type.FINISHED, sp.name(), p.pid(), who + " finished (exit code 0)");
      writeClusterFile();
      return;
    }
    if (sp.autoRestarts() >= spec.maxRestarts()) {
      sp.state(ProcessState.FAILED);
      String msg =
          who
              + " exited with code "
              + code
              + "; not restarting after "
              + sp.autoRestarts()
              + " restarts (see "
              + sp.info().log()
              + ")";
      log.error(msg);
      emit(ClusterEvent.Type.FAILED, sp.name(), p.pid(), msg);
      writeClusterFile();
      return;
    }
    int n = sp.countAutoRestart();
    sp.state(ProcessState.RESTARTING);
    String msg =
        who
            + " exited with code "
            + code
            + "; restarting (restart "
            + (sp.info().restarts() + 1)
            + ")";
    log.warn(msg);
    emit(ClusterEvent.Type.RESTARTING, sp.name(), p.pid(), msg);
    writeClusterFile();
    long generation = sp.generation();
    long delay = spec.restartBackoff().toMillis() * (1L << Math.min(n - 1, 3));
    try {
      watchdog.schedule(() -> relaunch(sp, generation), delay, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // closing: nothing to restart
    }
  }

  private void relaunch(ServiceProcess sp, long generation) {
    synchronized (lifecycle) {
      if (closing || sp.generation() != generation || sp.state() != ProcessState.RESTARTING) {
        return; // closed, or restarted/stopped by hand meanwhile
      }
      try {
        launch(sp);
      } catch (RuntimeException e) {
        log.error("could not restart {}: {}", sp.name(), e.getMessage());
        emit(ClusterEvent.Type.FAILED, sp.name(), -1, "could not restart " + sp.name() + ": " + e);
      }
    }
  }

  /** Whether the leader reports the job FINISHED or FAILED right now. */
  private boolean jobEndedNow() {
    Optional<JobStatusView> status = jobStatus();
    boolean ended = status.map(s -> s.isFinished() || s.isFailed()).orElse(false);
    if (ended) {
      jobEnded = true;
    }
    return ended;
  }

  private void probeStarting() {
    for (Role role : Role.values()) {
      for (ServiceProcess sp : slots.get(role)) {
        if (sp.state() == ProcessState.STARTING && sp.isAlive() && listens(sp.httpPort())) {
          synchronized (sp) {
            if (sp.state() != ProcessState.STARTING) {
              continue;
            }
            sp.state(ProcessState.RUNNING);
          }
          ProcessInfo info = sp.info();
          emit(
              ClusterEvent.Type.RUNNING,
              sp.name(),
              info.pid(),
              sp.name() + " listening on http " + info.httpPort());
          writeClusterFile();
        }
      }
    }
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
      sleep(POLL);
    }
  }

  private void markStopped(ServiceProcess sp, Process p) {
    boolean changed;
    synchronized (sp) {
      changed =
          sp.process() == p
              && sp.state() != ProcessState.STOPPED
              && sp.state() != ProcessState.NEW
              && (p == null || !p.isAlive());
      if (changed) {
        sp.state(ProcessState.STOPPED);
      }
    }
    if (changed) {
      long pid = p == null ? -1 : p.pid();
      Integer code = p != null ? p.exitValue() : sp.lastExitCode();
      emit(
          ClusterEvent.Type.STOPPED,
          sp.name(),
          pid,
          sp.name() + " (pid " + pid + ") stopped" + (code != null ? " with code " + code : ""));
      writeClusterFile();
    }
  }

  private static boolean listens(int port) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private void submit(Runnable task) {
    try {
      watchdog.execute(task);
    } catch (RejectedExecutionException e) {
      task.run(); // shut down: handle the exit inline so states stay right
    }
  }

  private void emit(ClusterEvent.Type type, String process, long pid, String message) {
    ClusterEvent event = new ClusterEvent(Instant.now(), type, process, pid, message);
    log.info(message);
    for (Consumer<ClusterEvent> l : listeners) {
      try {
        l.accept(event);
      } catch (RuntimeException e) {
        log.warn("cluster listener failed on '{}': {}", message, e.toString());
      }
    }
  }

  private void writeClusterFile() {
    try {
      clusterFile.write(
          spec.job(),
          new ClusterFile.EtcdInfo(etcd.endpoint(), etcd.pid(), etcd.dataDir()),
          spec.adminToken(),
          processes());
    } catch (UncheckedIOException e) {
      log.warn("{}", e.getMessage());
    }
  }

  private ServiceProcess slot(Role role, int index) {
    List<ServiceProcess> list = slots.get(role);
    if (index < 0 || index >= list.size()) {
      throw new IllegalArgumentException(
          "no "
              + role.id()
              + "-"
              + index
              + ": the cluster has "
              + list.size()
              + " "
              + role.id()
              + "s");
    }
    return list.get(index);
  }

  private long requireAlive(ServiceProcess sp, String what) {
    Process p = sp.process();
    if (p == null || !p.isAlive()) {
      throw new IllegalStateException("cannot " + what + " " + sp.name() + ": it is " + sp.state());
    }
    return p.pid();
  }

  private void requireRunning(String what) {
    if (!started || closing) {
      throw new IllegalStateException(
          "cannot " + what + ": the cluster is " + (closing ? "closed" : "not started"));
    }
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
