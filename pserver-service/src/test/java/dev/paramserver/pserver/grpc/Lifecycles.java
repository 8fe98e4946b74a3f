package dev.paramserver.pserver.grpc;

import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;

/** Role lifecycles for adapter tests. */
final class Lifecycles {
  private Lifecycles() {}

  /** A lifecycle in which {@code shard} serves {@code index} alone (SERVING). */
  static ShardLifecycle serving(ParameterShard shard, int index) {
    ShardLifecycle lifecycle = new ShardLifecycle(shard);
    lifecycle.claimed(index);
    lifecycle.serve();
    return lifecycle;
  }
}
