package dev.paramserver.etcd;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.tensor.SlotMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The job's elastic placement in etcd: the committed map ({@code placement}) and the move in
 * progress ({@code placement_move}). Every write is one transaction fenced on the revisions of both
 * keys as the writer read them, so two coordinators (a master that lost its leadership and its
 * successor, or two {@code psctl} runs) cannot interleave: the second write fails and its writer
 * reads again.
 */
public final class PlacementStore {
  private final KeyValueStore kv;
  private final JobKeys keys;

  public PlacementStore(Coordinator coordinator) {
    this(coordinator.kv(), coordinator.keys());
  }

  public PlacementStore(KeyValueStore kv, JobKeys keys) {
    this.kv = kv;
    this.keys = keys;
  }

  /**
   * What one read saw: the committed map (absent: the initial map of {@code ps_desired}) and the
   * move in progress, with the revisions a fenced write compares (0: the key was absent).
   */
  public record Read(
      Optional<PlacementMap> map, long mapRevision, Optional<SlotMove> move, long moveRevision) {

    /** The committed epoch (0 without a written map). */
    public long epoch() {
      return map.map(PlacementMap::getEpoch).orElse(0L);
    }

    /** The committed map, or {@code initial} when none was written yet. */
    public SlotMap slotMap(SlotMap initial) {
      return map.map(SlotMap::fromProto).orElse(initial);
    }

    /**
     * Whether pserver {@code index} still has a part in the placement written: the committed map
     * gives it slots or dense blocks, or the move in progress is from or to it. An index a shrink
     * is still moving away is such an index, even at or above {@code ps_desired}. False without a
     * written map (the initial map of {@code ps_desired} is in force).
     */
    public boolean places(int index) {
      if (index < 0 || map.isEmpty()) {
        return false;
      }
      if (move.isPresent() && (move.get().getFrom() == index || move.get().getTo() == index)) {
        return true;
      }
      PlacementMap m = map.get();
      return m.getSlotOwnersList().contains(index)
          || m.getDenseOwnersList().stream().anyMatch(b -> b.getOwner() == index);
    }
  }

  /** Reads both keys in one request (they share a prefix), so the pair is consistent. */
  public Read read() {
    Optional<PlacementMap> map = Optional.empty();
    Optional<SlotMove> move = Optional.empty();
    long mapRev = 0;
    long moveRev = 0;
    for (KeyValueStore.KeyValue kv : kv.getPrefix(keys.placement())) {
      try {
        if (kv.key().equals(keys.placement())) {
          map = Optional.of(PlacementMap.parseFrom(kv.value()));
          mapRev = kv.modRevision();
        } else if (kv.key().equals(keys.placementMove())) {
          move = Optional.of(SlotMove.parseFrom(kv.value()));
          moveRev = kv.modRevision();
        }
      } catch (InvalidProtocolBufferException e) {
        throw new CoordinationException(
            "etcd key " + kv.key() + " does not hold a placement record: " + e.getMessage(), e);
      }
    }
    return new Read(map, mapRev, move, moveRev);
  }

  /** Records {@code move} as in progress, if nothing changed since {@code seen} and none is. */
  public boolean begin(Read seen, SlotMove move) {
    if (seen.move().isPresent()) {
      return false;
    }
    return kv.commitIfRevisions(
        fence(seen), Map.of(keys.placementMove(), move.toByteArray()), List.of());
  }

  /**
   * Commits the move in progress: writes {@code next} (its epoch the move's) and deletes the move,
   * if nothing changed since {@code seen}.
   */
  public boolean commit(Read seen, PlacementMap next) {
    SlotMove move =
        seen.move().orElseThrow(() -> new IllegalStateException("no move in progress to commit"));
    if (next.getEpoch() != move.getEpoch()) {
      throw new IllegalArgumentException(
          "move "
              + move.getId()
              + " commits epoch "
              + move.getEpoch()
              + ", not "
              + next.getEpoch());
    }
    return kv.commitIfRevisions(
        fence(seen), Map.of(keys.placement(), next.toByteArray()), List.of(keys.placementMove()));
  }

  /** Rolls the move in progress back (deletes it), if nothing changed since {@code seen}. */
  public boolean abort(Read seen) {
    return seen.move().isPresent()
        && kv.commitIfRevisions(fence(seen), Map.of(), List.of(keys.placementMove()));
  }

  private Map<String, Long> fence(Read seen) {
    return Map.of(keys.placement(), seen.mapRevision(), keys.placementMove(), seen.moveRevision());
  }

  /**
   * Calls {@code onChange} with a fresh {@link #read} on every change of either key, from etcd's
   * watch thread. Close the result to stop.
   */
  public AutoCloseable watch(Consumer<Read> onChange) {
    return kv.watchPrefix(keys.placement(), event -> onChange.accept(read()));
  }
}
