package dev.paramserver.localcluster;

import dev.paramserver.launcher.Launcher;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.List;

/**
 * One supervised slot (role + index) and its current incarnation. Every field is guarded by the
 * object's monitor; {@link LocalCluster} decides what happens on an exit.
 */
final class ServiceProcess {
  /** What the cluster meant to happen when the process exits next. */
  enum Intent {
    /** An exit is unexpected: restart it. */
    NONE,
    /** Stopped or killed on purpose: do not restart. */
    STOP
  }

  private final Role role;
  private final int index;
  private final Path logFile;
  private Process process;
  private int httpPort;
  private int grpcPort;
  private ProcessState state = ProcessState.NEW;
  private Intent intent = Intent.NONE;
  private int restarts;
  private int autoRestarts;
  private long generation;
  private Integer lastExitCode;
  // the reason the last incarnation failed with (see ExitReason), or null
  private String lastFailure;
  private Process exitHandled;

  ServiceProcess(Role role, int index, Path logFile, int httpPort, int grpcPort) {
    this.role = role;
    this.index = index;
    this.logFile = logFile;
    this.httpPort = httpPort;
    this.grpcPort = grpcPort;
  }

  Role role() {
    return role;
  }

  int index() {
    return index;
  }

  String name() {
    return role.id() + "-" + index;
  }

  synchronized ProcessInfo info() {
    long pid = process == null ? -1 : process.pid();
    return new ProcessInfo(role, index, pid, httpPort, grpcPort, logFile, state, restarts);
  }

  /**
   * Starts a new incarnation on the given ports, appending to the log after a marker line. The
   * first launch is not a restart; every later one is.
   */
  synchronized Process launch(
      Launcher launcher, List<String> command, Path workDir, int http, int grpc, boolean probe)
      throws IOException {
    boolean first = state == ProcessState.NEW;
    httpPort = http;
    grpcPort = grpc;
    if (!first) {
      restarts++;
    }
    Files.createDirectories(logFile.getParent());
    Files.writeString(
        logFile,
        String.format(
            "%n===== %s %s %s (http %d, grpc %d): %s%n",
            Instant.now(),
            first ? "starting" : "restarting",
            first ? name() : name() + " (restart " + restarts + ")",
            http,
            grpc,
            String.join(" ", command)),
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
    process =
        launcher.start(
            new ProcessBuilder(Launcher.wrap(command))
                .directory(workDir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile())));
    generation++;
    intent = Intent.NONE;
    state = probe ? ProcessState.STARTING : ProcessState.RUNNING;
    return process;
  }

  synchronized Process process() {
    return process;
  }

  synchronized boolean isAlive() {
    return process != null && process.isAlive();
  }

  synchronized ProcessState state() {
    return state;
  }

  synchronized void state(ProcessState newState) {
    state = newState;
  }

  synchronized Intent intent() {
    return intent;
  }

  synchronized void intent(Intent newIntent) {
    intent = newIntent;
  }

  synchronized int httpPort() {
    return httpPort;
  }

  synchronized int grpcPort() {
    return grpcPort;
  }

  synchronized long generation() {
    return generation;
  }

  synchronized int autoRestarts() {
    return autoRestarts;
  }

  /** Counts one more automatic restart and returns the total so far. */
  synchronized int countAutoRestart() {
    return ++autoRestarts;
  }

  /** Records why the incarnation that exited failed (null: unknown); returns the previous one's. */
  synchronized String failedWith(String reason) {
    String previous = lastFailure;
    lastFailure = reason;
    return previous;
  }

  synchronized Integer lastExitCode() {
    return lastExitCode;
  }

  /**
   * Claims the handling of {@code p}'s exit: true once, for the current incarnation only (the exit
   * callback and a caller waiting for the exit may both try).
   */
  synchronized boolean claimExit(Process p, int code) {
    if (p != process || exitHandled == p) {
      return false;
    }
    exitHandled = p;
    lastExitCode = code;
    return true;
  }
}
