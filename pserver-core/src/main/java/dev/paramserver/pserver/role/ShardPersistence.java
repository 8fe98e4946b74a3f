package dev.paramserver.pserver.role;

/**
 * What the shard's role changes ask of checkpointing (implemented by the checkpoint service): load
 * a claimed index's state, start a fresh log for a state adopted in memory, checkpoint, forget a
 * log.
 */
public interface ShardPersistence {

  /**
   * Loads the newest readable checkpoint of {@code index} into the shard (and replays its log), or
   * leaves the shard uninitialised when there is none.
   */
  void load(int index);

  /**
   * The state the shard holds in memory becomes that of {@code index} (a backup taking over): the
   * log of {@code index} starts afresh; segments this process kept from an earlier life are
   * deleted. Call {@link #checkpoint} once the shard carries the index: that checkpoint is the
   * log's base.
   */
  void startLog(int index);

  /**
   * Writes a checkpoint of the shard now (nothing when it has no index or is not initialised).
   *
   * @throws RuntimeException when it cannot be written
   */
  void checkpoint();

  /**
   * Forgets the log this process holds for {@code index} (it becomes a backup: its state comes from
   * the primary, and old segments must not be replayed onto another state later). The segments are
   * set aside, not deleted (see {@code WriteAheadLog#setAside}).
   */
  void discardLog(int index);

  /**
   * Records that this pserver's log of {@code index} belongs to the primary of {@code epoch} (the
   * create revision of its {@code ps/<index>}). Nothing without a log.
   */
  default void logEpoch(int index, long epoch) {}

  /**
   * Sets what is told, once, that the log failed (a write or an fsync): the caller stops
   * acknowledging and gives the shard up. Called on the thread that met the failure, possibly under
   * the shard's locks: it must not block.
   */
  default void onStorageFailure(java.util.function.Consumer<String> listener) {}

  /** The epoch {@link #logEpoch} recorded for {@code index}, 0 when none (or no log). */
  default long loggedEpoch(int index) {
    return 0;
  }
}
