package dev.paramserver.serving.placement;

import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.serving.replica.PlacementSwitch;
import dev.paramserver.tensor.SlotMap;
import java.util.Optional;

/**
 * The job's committed placement map as trainers read it: etcd's {@code placement} key through the
 * shared {@link PlacementStore} (one read per call, and its watch).
 */
public final class EtcdPlacementSource implements PlacementSwitch.Source {
  private final PlacementStore store;

  public EtcdPlacementSource(PlacementStore store) {
    this.store = store;
  }

  @Override
  public Optional<SlotMap> committed() {
    return store.read().map().map(SlotMap::fromProto);
  }

  @Override
  public AutoCloseable watch(Runnable onChange) {
    return store.watch(read -> onChange.run());
  }
}
