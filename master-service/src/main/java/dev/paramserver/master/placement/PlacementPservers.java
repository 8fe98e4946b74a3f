package dev.paramserver.master.placement;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.SlotMap;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The job's pservers as the {@link PlacementCoordinator} sees them: their registrations and {@code
 * ps_desired} in etcd, their status and {@code MoveOut} through {@link PserverCalls}, and the
 * checks that refuse a job that cannot be scaled.
 */
final class PlacementPservers {
  private static final Duration STATUS_TIMEOUT = Duration.ofSeconds(10);

  private final Coordinator coordinator;
  private final PserverCalls calls;
  private final ScalingProperties settings;

  PlacementPservers(Coordinator coordinator, PserverCalls calls, ScalingProperties settings) {
    this.coordinator = coordinator;
    this.calls = calls;
    this.settings = settings;
  }

  /** The job's {@code ps_desired}, if set. */
  Optional<Integer> desiredIfSet() {
    return coordinator
        .kv()
        .get(coordinator.keys().psDesired())
        .map(kv -> Integer.parseInt(kv.valueAsString().trim()));
  }

  /** The job's {@code ps_desired}; fails when it is not set. */
  int desired() {
    return desiredIfSet().orElseThrow(() -> new IllegalStateException("ps_desired is not set"));
  }

  boolean registered(int index) {
    return coordinator.kv().get(coordinator.keys().ps(index)).isPresent();
  }

  /** The gRPC address pserver {@code index} registered. */
  String address(int index) {
    return coordinator
        .kv()
        .get(coordinator.keys().ps(index))
        .map(KeyValueStore.KeyValue::valueAsString)
        .orElseThrow(() -> new IllegalStateException("pserver " + index + " is not registered"));
  }

  /** The status of pserver {@code index}, within ten seconds. */
  ShardStatus status(int index) {
    return calls.status(address(index), STATUS_TIMEOUT);
  }

  /** Asks the slots' owner to move them, within {@link ScalingProperties#moveTimeout}. */
  MoveOutResponse moveOut(SlotMove move) {
    return calls.moveOut(address(move.getFrom()), move, settings.moveTimeout());
  }

  /** Refuses to scale a job that is not asynchronous or runs replicas. */
  void checkServers(int n) {
    for (int i = 0; i < n; i++) {
      if (!registered(i)) {
        continue; // a new index, not registered yet: nothing to check
      }
      refuseUnscalable(i, status(i));
    }
  }

  /** Refuses a pserver that runs a replica, or an initialised one not in asynchronous mode. */
  private static void refuseUnscalable(int index, ShardStatus s) {
    if (s.getReplicaRole() != ReplicaRole.REPLICA_NONE) {
      throw new IllegalStateException(
          "pserver " + index + " runs with a replica: scaling with replicas is not supported yet");
    }
    if (s.getInitialised() && s.getMode() != TrainingMode.ASYNC) {
      throw new IllegalStateException(
          "the job trains in " + s.getMode() + " mode: only asynchronous jobs can be scaled live");
    }
  }

  /**
   * The initial map of the job's {@code n} pservers, with the dense blocks where they are: every
   * pserver must be registered and initialised (the blocks are known only then).
   */
  SlotMap initialMap(int n) {
    List<BlockSpec> dense = new ArrayList<>();
    Map<String, Integer> owners = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      if (!registered(i)) {
        throw new IllegalStateException(
            "pserver " + i + " of " + n + " is not registered: scale once every pserver runs");
      }
      ShardStatus s = status(i);
      if (!s.getInitialised()) {
        throw new IllegalStateException(
            "pserver "
                + i
                + " is not initialised yet: scale once training has started (the parameters"
                + " are placed then)");
      }
      refuseUnscalable(i, s);
      for (int b = 0; b < s.getBlockRefsCount(); b++) {
        var ref = s.getBlockRefs(b);
        long bytes = b < s.getBlockBytesCount() ? s.getBlockBytes(b) : 0;
        dense.add(new BlockSpec(ref.getName(), ref.getBlock(), 0, (int) (bytes / 4)));
        owners.put(ref.getName() + "#" + ref.getBlock(), i);
      }
    }
    SlotMap initial = SlotMap.initial(dense, n);
    for (BlockSpec b : dense) {
      int where = owners.get(b.id());
      if (initial.ownerOfBlock(b.name(), b.block()) != where) {
        throw new IllegalStateException(
            "block "
                + b.id()
                + " is on pserver "
                + where
                + ", not where the placement rule puts it: the job's blocks are not placed by the"
                + " rule the trainers use");
      }
    }
    return initial;
  }
}
