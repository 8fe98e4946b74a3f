package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.PlacementStore;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The job's pservers as registered: how many the job wants ({@code ps_desired}) and the gRPC
 * address of each registered index ({@code ps/<idx>}). Reads may fail with a runtime exception
 * while the job's coordination is unreachable.
 */
public interface PserverRegistry {

  /** The pserver count the job wants; 0 while unset. */
  int desired();

  /** Every registered pserver: index to address. */
  Map<Integer, String> addresses();

  /** The address of pserver {@code index}, read afresh; empty while it is not registered. */
  Optional<String> address(int index);

  /**
   * Tells {@code listener} of every registration change from now on. The listener must be quick;
   * closing the handle stops it.
   */
  AutoCloseable watch(Listener listener);

  /**
   * The job's elastic placement as read now: the committed map (absent: the initial map of {@link
   * #desired}) and the move in progress. A registry that does not know it says neither.
   */
  default PlacementStore.Read placement() {
    return NO_PLACEMENT;
  }

  /**
   * Tells {@code listener} of every change of the placement from now on, with a fresh {@link
   * #placement} read. The listener must be quick; closing the handle stops it.
   */
  default AutoCloseable watchPlacement(Consumer<PlacementStore.Read> listener) {
    return () -> {};
  }

  /** Neither a committed map nor a move. */
  PlacementStore.Read NO_PLACEMENT =
      new PlacementStore.Read(Optional.empty(), 0, Optional.empty(), 0);

  /** A registration change. */
  @FunctionalInterface
  interface Listener {
    /**
     * @param index the pserver index
     * @param address its new address, or null when it deregistered
     */
    void changed(int index, String address);
  }
}
