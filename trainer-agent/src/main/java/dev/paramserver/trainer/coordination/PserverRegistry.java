package dev.paramserver.trainer.coordination;

import java.util.Map;
import java.util.Optional;

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
