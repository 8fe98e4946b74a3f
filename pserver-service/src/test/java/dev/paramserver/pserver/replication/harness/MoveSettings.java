package dev.paramserver.pserver.replication.harness;

/**
 * What a move simulation's run explores: its trainers, each pushing at least {@code pushes} steps
 * and on while the grow goes on (at most {@code maxPushes}), and how many faults it meets.
 */
record MoveSettings(int trainers, int pushes, int maxPushes, int faults, int faultPercent) {
  static MoveSettings standard() {
    return new MoveSettings(2, 20, 160, 3, 10);
  }

  /** No fault of any kind: a grow as it runs on a quiet cluster. */
  static MoveSettings quiet() {
    return new MoveSettings(2, 20, 160, 0, 0);
  }
}
