package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.PserverEntry;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The pservers as the master's cluster maps tell them (the Attend stream's answers): the latest map
 * wins, and each map's differences from the one before reach the listeners as registration changes.
 * A map older than the latest (a lower etcd revision, from a master that lags after a failover) is
 * ignored. The maps carry the job's elastic placement too: every map whose placement differs from
 * the one before reaches the placement listeners.
 */
final class ClusterMapRegistry implements PserverRegistry {
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  private final List<Consumer<PlacementStore.Read>> placementListeners =
      new CopyOnWriteArrayList<>();
  private ClusterMap latest = ClusterMap.getDefaultInstance();
  private boolean seen;

  /**
   * Takes a new map and tells the listeners what changed, in index order.
   *
   * @return whether the map was taken (false: it is older than the latest)
   */
  boolean apply(ClusterMap map) {
    Map<Integer, PserverEntry> before;
    Map<Integer, PserverEntry> after = byIndex(map);
    boolean placementChanged;
    synchronized (this) {
      if (seen && map.getRevision() < latest.getRevision()) {
        return false;
      }
      before = byIndex(latest);
      placementChanged =
          !seen
              || !map.getPlacement().equals(latest.getPlacement())
              || !map.getPlacementMove().equals(latest.getPlacementMove());
      latest = map;
      seen = true;
    }
    if (placementChanged) {
      PlacementStore.Read read = placementOf(map);
      placementListeners.forEach(l -> l.accept(read));
    }
    for (int index : union(before, after)) {
      PserverEntry was = before.get(index);
      PserverEntry now = after.get(index);
      if (now == null) {
        tell(index, null);
      } else if (was == null
          || !was.getAddress().equals(now.getAddress())
          || was.getEpoch() != now.getEpoch()) {
        tell(index, now.getAddress());
      }
    }
    return true;
  }

  /** The latest map (empty before the first). */
  synchronized ClusterMap latest() {
    return latest;
  }

  /** Whether a map arrived yet. */
  synchronized boolean seen() {
    return seen;
  }

  @Override
  public synchronized int desired() {
    return latest.getPserversDesired();
  }

  @Override
  public Map<Integer, String> addresses() {
    Map<Integer, String> out = new HashMap<>();
    byIndex(latest()).forEach((i, e) -> out.put(i, e.getAddress()));
    return out;
  }

  @Override
  public Optional<String> address(int index) {
    return Optional.ofNullable(byIndex(latest()).get(index)).map(PserverEntry::getAddress);
  }

  @Override
  public PlacementStore.Read placement() {
    return placementOf(latest());
  }

  @Override
  public AutoCloseable watchPlacement(Consumer<PlacementStore.Read> listener) {
    placementListeners.add(listener);
    return () -> placementListeners.remove(listener);
  }

  /** The placement a map carries, as an etcd read would give it (no revisions: never written). */
  private static PlacementStore.Read placementOf(ClusterMap map) {
    return new PlacementStore.Read(
        map.hasPlacement() ? Optional.of(map.getPlacement()) : Optional.empty(),
        0,
        map.hasPlacementMove() ? Optional.of(map.getPlacementMove()) : Optional.empty(),
        0);
  }

  @Override
  public AutoCloseable watch(Listener listener) {
    listeners.add(listener);
    return () -> listeners.remove(listener);
  }

  private void tell(int index, String address) {
    for (Listener l : listeners) {
      l.changed(index, address);
    }
  }

  private static Map<Integer, PserverEntry> byIndex(ClusterMap map) {
    Map<Integer, PserverEntry> out = new HashMap<>();
    for (PserverEntry e : map.getPserversList()) {
      if (!e.getAddress().isEmpty()) {
        out.put(e.getIndex(), e);
      }
    }
    return out;
  }

  private static SortedSet<Integer> union(
      Map<Integer, PserverEntry> a, Map<Integer, PserverEntry> b) {
    SortedSet<Integer> out = new TreeSet<>(a.keySet());
    out.addAll(b.keySet());
    return out;
  }
}
