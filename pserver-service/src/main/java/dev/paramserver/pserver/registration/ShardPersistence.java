package dev.paramserver.pserver.registration;

/** What the registration asks of checkpointing: load the claimed index's newest checkpoint. */
public interface ShardPersistence {

  /**
   * Loads the newest readable checkpoint of {@code index} into the shard, or leaves the shard
   * uninitialised when there is none.
   */
  void load(int index);
}
