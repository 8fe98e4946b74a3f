package dev.paramserver.pserver.shard;

/**
 * The one holder of the index the shard carries (the role lifecycle, {@code role.ShardLifecycle}):
 * the shard asks it instead of keeping a copy. A read is cheap (a volatile read): pushes ask it on
 * their way.
 */
@FunctionalInterface
public interface IndexHolder {
  /** The index the shard carries (its state is that index's), or -1. */
  int carriedIndex();
}
