package dev.paramserver.localcluster;

/** Where a supervised process is in its life, as shown by {@link LocalCluster#processes()}. */
public enum ProcessState {
  /** Not launched yet. */
  NEW,
  /** Launched; its HTTP port does not accept connections yet. */
  STARTING,
  /** Alive and (when probed) listening on its HTTP port. */
  RUNNING,
  /** Frozen with SIGSTOP. */
  PAUSED,
  /** Exited unexpectedly; a restart is scheduled. */
  RESTARTING,
  /** Stopped on purpose (stop, kill without restart, or cluster close). */
  STOPPED,
  /** A trainer that exited with code 0 after the job ended: its work is done. */
  FINISHED,
  /** Exited unexpectedly too often; the supervisor gave up on it. */
  FAILED;

  /** Whether a process in this state is expected to be alive. */
  public boolean isLive() {
    return this == STARTING || this == RUNNING || this == PAUSED;
  }
}
