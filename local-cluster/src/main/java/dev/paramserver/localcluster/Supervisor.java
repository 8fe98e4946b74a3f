package dev.paramserver.localcluster;

import dev.paramserver.launcher.EtcdProcess;
import dev.paramserver.launcher.Launcher;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The supervision behind {@link LocalCluster}: the process slots, launching on free ports, reacting
 * to exits (restart with backoff, give up after the budget or when a trainer fails twice in a row
 * with the same error, leave finished trainers and stopped processes alone), probing HTTP ports,
 * events and cluster.json. State changes of the cluster as a whole (start, launches, close) hold
 * {@link #lifecycle()}.
 */
final class Supervisor {
  private static final Logger log = LoggerFactory.getLogger(LocalCluster.class);
  static final Duration POLL = Duration.ofMillis(250);

  private final ClusterSpec spec;
  private final PortAllocator ports;
  private final Launcher launcher = new Launcher();
  private final EtcdProcess etcd;
  private final Map<Role, List<ServiceProcess>> slots = new EnumMap<>(Role.class);
  private final ClusterFile clusterFile;
  private final ScheduledExecutorService watchdog =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "local-cluster-watchdog");
            t.setDaemon(true);
            return t;
          });
  private final List<Consumer<ClusterEvent>> listeners = new CopyOnWriteArrayList<>();
  private final Object lifecycle = new Object();
  private final BooleanSupplier jobEndedProbe;
  private volatile boolean started;
  private volatile boolean closing;
  private volatile boolean jobEnded;

  /**
   * @param jobEndedProbe asks the master whether the job has ended (for a trainer exiting with 0)
   */
  Supervisor(ClusterSpec spec, PortAllocator ports, BooleanSupplier jobEndedProbe) {
    this.spec = spec;
    this.ports = ports;
    this.jobEndedProbe = jobEndedProbe;
    Path runDir = spec.runDir();
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
  }

  Object lifecycle() {
    return lifecycle;
  }

  EtcdProcess etcd() {
    return etcd;
  }

  ClusterFile clusterFile() {
    return clusterFile;
  }

  boolean isStarted() {
    return started;
  }

  boolean isClosing() {
    return closing;
  }

  void markJobEnded() {
    jobEnded = true;
  }

  /** Whether the job has ended, asking the master when nobody has said so yet. */
  private boolean jobEnded() {
    if (!jobEnded && jobEndedProbe.getAsBoolean()) {
      jobEnded = true;
    }
    return jobEnded;
  }

  void addListener(Consumer<ClusterEvent> listener) {
    listeners.add(listener);
  }

  /** Marks the cluster started; false when it was started or closed before. */
  boolean beginStart() {
    synchronized (lifecycle) {
      if (started || closing) {
        return false;
      }
      started = true;
      return true;
    }
  }

  /** Marks the cluster closing (no more launches or restarts); false when it already was. */
  boolean beginClose() {
    synchronized (lifecycle) {
      if (closing) {
        return false;
      }
      closing = true;
      return true;
    }
  }

  /** Starts promoting STARTING processes to RUNNING once their HTTP port accepts connections. */
  void startProbing() {
    watchdog.scheduleWithFixedDelay(
        this::probeStarting, POLL.toMillis(), POLL.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Launches every process of the roles, in order, at once (none is awaited). */
  void launchAll(List<Role> roles) {
    synchronized (lifecycle) {
      requireRunning("start");
      for (Role role : roles) {
        for (ServiceProcess sp : slots.get(role)) {
          launch(sp);
        }
      }
    }
  }

  /** Launches a new incarnation of a process that is not running. */
  void launchAgain(ServiceProcess sp) {
    synchronized (lifecycle) {
      requireRunning("restart " + sp.name());
      launch(sp);
    }
  }

  /** Adds and launches one more process of the role. */
  ServiceProcess add(Role role) {
    synchronized (lifecycle) {
      requireRunning("add a " + role.id());
      List<ServiceProcess> list = slots.get(role);
      ServiceProcess sp = newSlot(role, list.size());
      list.add(sp);
      launch(sp);
      return sp;
    }
  }

  List<ServiceProcess> group(Role role) {
    return slots.get(role);
  }

  /** Snapshots of every process, masters first, then pservers, then trainers. */
  List<ProcessInfo> processes() {
    List<ProcessInfo> list = new ArrayList<>();
    for (Role role : Role.values()) {
      slots.get(role).forEach(sp -> list.add(sp.info()));
    }
    return list;
  }

  /**
   * Ends the watchdog and launcher threads; call once every child has stopped. Waits (a bounded
   * time) for a watchdog task that is running to end, so that nothing writes into the run folder
   * (its {@code cluster.json}) once the cluster is closed.
   */
  void shutdownThreads() {
    watchdog.shutdownNow();
    launcher.shutdown();
    try {
      if (!watchdog.awaitTermination(5, TimeUnit.SECONDS)) {
        log.warn("the local cluster's watchdog thread did not end within 5 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  ServiceProcess newSlot(Role role, int index) {
    Path logFile = spec.runDir().resolve("logs").resolve(role.id() + "-" + index + ".log");
    return new ServiceProcess(
        role, index, logFile, ports.next(), role.hasGrpcServer() ? ports.next() : 0);
  }

  /** Launches a new incarnation of {@code sp}; callers hold {@link #lifecycle()}. */
  void launch(ServiceProcess sp) {
    int http = ports.reuseOrNext(sp.httpPort());
    int grpc = sp.role().hasGrpcServer() ? ports.reuseOrNext(sp.grpcPort()) : 0;
    List<String> command =
        spec.command()
            .build(
                new ServiceCommand.LaunchContext(
                    spec,
                    sp.role(),
                    sp.index(),
                    http,
                    grpc,
                    etcd.endpoint(),
                    group(Role.MASTER).stream().map(m -> "127.0.0.1:" + m.grpcPort()).toList()));
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

  void onExit(ServiceProcess sp, Process p) {
    int code = p.exitValue();
    if (!sp.claimExit(p, code)) {
      return; // an older incarnation, or handled already
    }
    String who = sp.name() + " (pid " + p.pid() + ")";
    if (closing || sp.intent() == ServiceProcess.Intent.STOP) {
      markStopped(sp, p);
      return;
    }
    if (sp.role() == Role.TRAINER && code == 0 && jobEnded()) {
      sp.state(ProcessState.FINISHED);
      emit(ClusterEvent.Type.FINISHED, sp.name(), p.pid(), who + " finished (exit code 0)");
      writeClusterFile();
      return;
    }
    if (sp.role() == Role.PSERVER && code == 0) {
      // a pserver exits 0 only when asked to (an emptied pserver after psctl scale, an admin
      // shutdown): restarting it would bring back an index the job no longer has
      sp.state(ProcessState.STOPPED);
      emit(
          ClusterEvent.Type.STOPPED,
          sp.name(),
          p.pid(),
          who + " exited with code 0 (drained: scaled away or shut down); not restarted");
      writeClusterFile();
      return;
    }
    String refused = code != 0 ? StartupFailure.reasonIn(sp.info().log()) : null;
    if (refused != null) {
      // a bad setting stays bad: restarting cannot help
      sp.state(ProcessState.FAILED);
      String msg = who + " refused to start: " + refused + " (see " + sp.info().log() + ")";
      log.error(msg);
      emit(ClusterEvent.Type.FAILED, sp.name(), p.pid(), msg);
      writeClusterFile();
      return;
    }
    String reason = code != 0 && sp.role() == Role.TRAINER ? ExitReason.in(sp.info().log()) : null;
    if (reason != null && reason.equals(sp.failedWith(reason))) {
      // it failed the same way as the incarnation before: restarting again cannot help
      sp.state(ProcessState.FAILED);
      String msg =
          who
              + " exited with code "
              + code
              + " and the same error as before its restart; not restarting: "
              + reason
              + " (see "
              + sp.info().log()
              + ")";
      log.error(msg);
      emit(ClusterEvent.Type.FAILED, sp.name(), p.pid(), msg);
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

  void markStopped(ServiceProcess sp, Process p) {
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

  void emit(ClusterEvent.Type type, String process, long pid, String message) {
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

  void writeClusterFile() {
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

  ServiceProcess slot(Role role, int index) {
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

  void requireRunning(String what) {
    if (!started || closing) {
      throw new IllegalStateException(
          "cannot " + what + ": the cluster is " + (closing ? "closed" : "not started"));
    }
  }
}
