package dev.paramserver.localcluster;

import java.nio.file.Path;

/**
 * A snapshot of one supervised process.
 *
 * @param role the process's role
 * @param index 0-based index within the role
 * @param pid process id of the current (or last) incarnation, -1 when never launched
 * @param httpPort HTTP port (actuator and admin)
 * @param grpcPort gRPC port, 0 for trainers
 * @param log the log file (stdout and stderr, appended across restarts)
 * @param state current state
 * @param restarts how many times the process was launched again after its first start
 */
public record ProcessInfo(
    Role role,
    int index,
    long pid,
    int httpPort,
    int grpcPort,
    Path log,
    ProcessState state,
    int restarts) {

  /** The name used in logs and messages, for example {@code pserver-1}. */
  public String name() {
    return role.id() + "-" + index;
  }
}
