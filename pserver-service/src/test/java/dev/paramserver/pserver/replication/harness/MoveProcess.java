package dev.paramserver.pserver.replication.harness;

/**
 * A pserver process of the move simulation: the index it serves, its scheduler node, its pserver,
 * and what the nemesis did to it (paused, crashed, its lease expired while paused).
 */
final class MoveProcess {
  final int index;
  final String node;
  final MovePserver pserver;
  boolean paused;
  boolean crashed;
  boolean leaseExpired;
  SimulationScheduler.Timer expiry;

  MoveProcess(int index, String node, MovePserver pserver) {
    this.index = index;
    this.node = node;
    this.pserver = pserver;
  }
}
