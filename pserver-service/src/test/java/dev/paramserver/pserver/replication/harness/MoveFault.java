package dev.paramserver.pserver.replication.harness;

/** What the move simulation's nemesis does to the old or the new owner of a move under way. */
enum MoveFault {
  /** Nothing passes to or from the pserver (both ways) for a while. */
  PARTITION,
  /** Requests reach the pserver, its replies are lost (one way), for a while. */
  ONE_WAY,
  /** The pserver stops (SIGSTOP) for a while; past the lease TTL, etcd expires its lease. */
  PAUSE,
  /** {@code kill -9}; it restarts on the same disk once etcd expired its lease. */
  CRASH,
  /** The coordinator's replies are lost for a while: a MoveOut runs, its answer never arrives. */
  LOST_MOVE_OUT_REPLY,
  /** No fault. */
  NONE
}
