package dev.paramserver.pserver.replication.harness;

/**
 * What a move simulation's run explores: its trainers, each pushing at least {@code pushes} steps
 * and on while the placement changes (at most {@code maxPushes}), how many faults it meets, whether
 * the grow from two pservers to three is followed by a shrink back to two ({@code shrinkBack}), and
 * whether its coordinator carries an injected defect ({@code commitWithoutMoveOut}: it commits each
 * move as soon as it began it, without asking the old owner to move the slots).
 */
record MoveSettings(
    int trainers,
    int pushes,
    int maxPushes,
    int faults,
    int faultPercent,
    boolean shrinkBack,
    boolean commitWithoutMoveOut) {
  static MoveSettings standard() {
    return new MoveSettings(2, 20, 160, 3, 10, true, false);
  }

  /** No fault of any kind: a grow and a shrink as they run on a quiet cluster. */
  static MoveSettings quiet() {
    return new MoveSettings(2, 20, 160, 0, 0, true, false);
  }

  /**
   * With the injected defect: moves committed without their MoveOut, in a grow alone (a shrink back
   * would give the slots back to the pservers that never let them go).
   */
  MoveSettings committingWithoutMoveOut() {
    return new MoveSettings(trainers, pushes, maxPushes, faults, faultPercent, false, true);
  }

  /** The number of pservers the run ends with. */
  int finalPservers() {
    return shrinkBack ? 2 : 3;
  }
}
