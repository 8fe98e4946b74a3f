package dev.paramserver.localcluster;

import java.time.Instant;

/**
 * Something the supervisor did or saw, for listeners registered with {@link
 * LocalCluster#addListener}.
 *
 * @param time when it happened
 * @param type what happened
 * @param process the process name ({@code pserver-1}) or {@code etcd}
 * @param pid the process id concerned, or -1
 * @param message a one-line human-readable description
 */
public record ClusterEvent(Instant time, Type type, String process, long pid, String message) {

  /** Kinds of events. */
  public enum Type {
    STARTED,
    RUNNING,
    EXITED,
    RESTARTING,
    RESTARTED,
    STOPPED,
    FINISHED,
    FAILED,
    PAUSED,
    RESUMED,
    ETCD_STARTED,
    ETCD_STOPPED
  }

  @Override
  public String toString() {
    return message;
  }
}
