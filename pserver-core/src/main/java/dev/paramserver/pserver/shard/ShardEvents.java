package dev.paramserver.pserver.shard;

import java.util.function.Consumer;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Who is told what happens to a {@link ParameterShard}: one listener per event, last one wins. */
public final class ShardEvents {
  private static final Logger log = LoggerFactory.getLogger(ShardEvents.class);

  private volatile Consumer<String> tableDefined = name -> {};
  private volatile Runnable initialised = () -> {};
  private volatile LongConsumer syncStepApplied = s -> {};

  /** Tells {@code listener} the name of every sparse table defined from now on (for metrics). */
  public void onTableDefined(Consumer<String> listener) {
    this.tableDefined = listener;
  }

  /** Runs {@code listener} each time the shard becomes initialised through FinishInit. */
  public void onInitialised(Runnable listener) {
    this.initialised = listener;
  }

  /**
   * Runs {@code listener} with the shard's update count right after each synchronous step was
   * applied, before the next step can be: the listener sees (and may snapshot) the shard exactly at
   * that step. It runs on the thread that completed the step, holding the step barrier: keep it
   * short.
   */
  public void onSyncStepApplied(LongConsumer listener) {
    this.syncStepApplied = listener;
  }

  void tableDefined(String name) {
    tableDefined.accept(name);
  }

  void initialised() {
    initialised.run();
  }

  void syncStepApplied(long reached) {
    try {
      syncStepApplied.accept(reached);
    } catch (RuntimeException e) {
      log.error("listener of synchronous step {} failed", reached, e);
    }
  }
}
