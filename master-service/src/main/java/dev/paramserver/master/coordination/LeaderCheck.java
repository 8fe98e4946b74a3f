package dev.paramserver.master.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Whether this master leads, as the Master service sees it: only the leader coordinates trainers. A
 * refusal is NOT_LEADER with the leader's address, when known, in the ErrorInfo metadata key {@code
 * leader}.
 */
public final class LeaderCheck {
  private final BooleanSupplier leading;
  private final Supplier<Optional<String>> leaderAddress;

  /**
   * @param leading true while this master leads and serves
   * @param leaderAddress the leader's {@code host:port} as published in etcd, if known
   */
  public LeaderCheck(BooleanSupplier leading, Supplier<Optional<String>> leaderAddress) {
    this.leading = leading;
    this.leaderAddress = leaderAddress;
  }

  public boolean isLeader() {
    return leading.getAsBoolean();
  }

  /** Throws NOT_LEADER unless this master leads. */
  public void require() {
    if (!isLeader()) {
      throw notLeader("this master is not the leader");
    }
  }

  /** NOT_LEADER, {@code why}, and where the leader is when it is known. */
  public ServiceException notLeader(String why) {
    Optional<String> leader = Optional.empty();
    try {
      leader = leaderAddress.get();
    } catch (RuntimeException e) {
      // no address then: the client finds the leader by trying the masters it knows
    }
    return new ServiceException(
        ErrorReason.NOT_LEADER,
        leader
            .map(a -> why + "; the leader is at " + a + ": Join and Attend there")
            .orElse(why + " and no leader is known yet; retry shortly with another master"),
        leader.map(a -> Map.of("leader", a)).orElse(Map.of()));
  }
}
