package dev.paramserver.pserver.replication.harness;

/**
 * What a move simulation's run explores: its trainers, each pushing at least {@code pushes} steps
 * and on while the grow goes on (at most {@code maxPushes}), how many faults it meets, and whether
 * its coordinator carries an injected defect ({@code commitWithoutMoveOut}: it commits each move as
 * soon as it began it, without asking the old owner to move the slots).
 */
record MoveSettings(
    int trainers,
    int pushes,
    int maxPushes,
    int faults,
    int faultPercent,
    boolean commitWithoutMoveOut) {
  static MoveSettings standard() {
    return new MoveSettings(2, 20, 160, 3, 10, false);
  }

  /** No fault of any kind: a grow as it runs on a quiet cluster. */
  static MoveSettings quiet() {
    return new MoveSettings(2, 20, 160, 0, 0, false);
  }

  /** With the injected defect: moves committed without their MoveOut. */
  MoveSettings committingWithoutMoveOut() {
    return new MoveSettings(trainers, pushes, maxPushes, faults, faultPercent, true);
  }
}
