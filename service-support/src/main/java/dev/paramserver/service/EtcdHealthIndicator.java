package dev.paramserver.service;

import dev.paramserver.etcd.Coordinator;
import java.util.List;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * Health contributor "etcd": UP while the last calls to etcd succeeded (the coordinator probes it
 * every 2 s), DOWN otherwise. Part of the readiness group by default.
 */
public final class EtcdHealthIndicator implements HealthIndicator {
  private final Coordinator coordinator;
  private final List<String> endpoints;

  public EtcdHealthIndicator(Coordinator coordinator, List<String> endpoints) {
    this.coordinator = coordinator;
    this.endpoints = List.copyOf(endpoints);
  }

  @Override
  public Health health() {
    Health.Builder health = coordinator.isConnected() ? Health.up() : Health.down();
    health.withDetail("endpoints", endpoints).withDetail("job", coordinator.keys().job());
    if (!coordinator.isConnected()) {
      health.withDetail("reason", "etcd did not answer the last calls");
    }
    return health.build();
  }
}
