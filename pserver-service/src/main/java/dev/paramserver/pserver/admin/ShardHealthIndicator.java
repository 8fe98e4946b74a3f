package dev.paramserver.pserver.admin;

import dev.paramserver.pserver.registration.RegistrationState;
import dev.paramserver.pserver.registration.ShardRegistration;
import dev.paramserver.pserver.shard.ParameterShard;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * Health contributor "shard", part of the readiness group: UP once this pserver holds an index in
 * etcd and its shard is initialised (by trainers or from a checkpoint); OUT_OF_SERVICE before.
 */
@Component("shard")
public final class ShardHealthIndicator implements HealthIndicator {
  private final ShardRegistration registration;
  private final ParameterShard shard;

  public ShardHealthIndicator(ShardRegistration registration, ParameterShard shard) {
    this.registration = registration;
    this.shard = shard;
  }

  @Override
  public Health health() {
    RegistrationState state = registration.state();
    boolean registered = state == RegistrationState.REGISTERED;
    Health.Builder b = registered && shard.initialised() ? Health.up() : Health.outOfService();
    return b.withDetail("registration", state.name())
        .withDetail("index", registration.index())
        .withDetail("initialised", shard.initialised())
        .withDetail("step", shard.step())
        .build();
  }
}
