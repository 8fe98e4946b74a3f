package dev.paramserver.master.election;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * Health contributor "leadership": UP only while this master leads and serves. A standby is alive
 * but not ready, so a load balancer or Kubernetes Service routes only to the leader.
 */
public final class LeadershipHealthIndicator implements HealthIndicator {
  private final MasterElection election;

  public LeadershipHealthIndicator(MasterElection election) {
    this.election = election;
  }

  @Override
  public Health health() {
    Health.Builder h = election.isLeader() ? Health.up() : Health.down();
    h.withDetail("state", election.state().name());
    election.leaderAddress().ifPresent(a -> h.withDetail("leader", a));
    return h.build();
  }
}
