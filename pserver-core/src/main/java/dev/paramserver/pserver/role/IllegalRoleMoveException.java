package dev.paramserver.pserver.role;

/** A move of {@link ShardRole} that the state machine does not allow. */
public final class IllegalRoleMoveException extends IllegalStateException {
  private final ShardRole from;
  private final ShardRole to;

  IllegalRoleMoveException(ShardRole from, ShardRole to, String why) {
    super(
        "shard role cannot move "
            + from
            + " -> "
            + to
            + " ("
            + why
            + "): allowed from "
            + from
            + " are the moves of ShardRole.canMoveTo");
    this.from = from;
    this.to = to;
  }

  public ShardRole from() {
    return from;
  }

  public ShardRole to() {
    return to;
  }
}
