package dev.paramserver.serving.admin;

import dev.paramserver.serving.replica.ServedVersion;
import dev.paramserver.serving.replica.ServingReplica;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * Health contributor "served", part of the readiness group: UP once every shard holds a copy (a
 * version is served), OUT_OF_SERVICE before.
 */
@Component("served")
public final class ServedVersionHealthIndicator implements HealthIndicator {
  private final ServingReplica replica;

  public ServedVersionHealthIndicator(ServingReplica replica) {
    this.replica = replica;
  }

  @Override
  public Health health() {
    ServedVersion v = replica.model().version();
    return (v == null ? Health.outOfService() : Health.up())
        .withDetail("version", v == null ? 0 : v.number())
        .build();
  }
}
