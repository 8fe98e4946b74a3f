package dev.paramserver.pserver.replication.harness;

/** What a move simulation's run explores: its size and how many faults it meets. */
record MoveSettings(int trainers, int pushes, int faults, int faultPercent) {
  static MoveSettings standard() {
    return new MoveSettings(2, 8, 3, 10);
  }

  /** No fault of any kind: a move as it runs on a quiet cluster. */
  static MoveSettings quiet() {
    return new MoveSettings(2, 8, 0, 0);
  }
}
