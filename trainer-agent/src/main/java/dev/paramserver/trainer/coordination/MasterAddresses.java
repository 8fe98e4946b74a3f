package dev.paramserver.trainer.coordination;

import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The configured masters ({@code paramserver.trainer.coordination.masters}), one of which leads.
 * Calls go to the last master that answered; after a failure they go to the leader the failed
 * master named (a standby's NOT_LEADER answer), else to the next configured master, round the list.
 */
final class MasterAddresses implements MasterLocator {
  private static final Logger log = LoggerFactory.getLogger(MasterAddresses.class);

  private final List<String> configured;
  private int next;
  private String current;

  MasterAddresses(List<String> configured) {
    if (configured.isEmpty()) {
      throw new IllegalArgumentException(
          "no master addresses: set paramserver.trainer.coordination.masters to host:port,...");
    }
    this.configured = List.copyOf(configured);
    this.current = this.configured.get(0);
    this.next = 1 % this.configured.size();
  }

  @Override
  public synchronized Optional<String> current() {
    return Optional.of(current);
  }

  @Override
  public synchronized void failed(String address, String leaderHint) {
    if (!address.equals(current)) {
      return; // another caller moved on already
    }
    if (leaderHint != null && !leaderHint.isBlank() && !leaderHint.equals(address)) {
      current = leaderHint;
      log.info("master {} is not the leader; the leader is {}", address, leaderHint);
      return;
    }
    current = configured.get(next);
    next = (next + 1) % configured.size();
    log.info("master {} did not serve; trying {}", address, current);
  }

  @Override
  public String describe() {
    return "among " + configured;
  }

  @Override
  public void close() {}
}
