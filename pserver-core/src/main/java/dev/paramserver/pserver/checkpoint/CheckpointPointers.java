package dev.paramserver.pserver.checkpoint;

import dev.paramserver.proto.v1.CheckpointMeta;
import java.util.Optional;

/**
 * Where the pointer to each shard's newest checkpoint file is kept, with a version for a
 * compare-and-swap. This module owns the interface and links no store: the pserver keeps the
 * pointers in etcd ({@code checkpoints/<idx>}), tests may keep them in memory.
 */
public interface CheckpointPointers {
  /**
   * Shard {@code index}'s pointer with the version it was read at; empty when none is stored.
   *
   * @throws RuntimeException when the store cannot be read or holds something else
   */
  Optional<Pointer> read(int index);

  /**
   * Stores {@code meta} as shard {@code index}'s pointer if it is still at {@code version} (0: none
   * stored).
   *
   * @return false when it changed since (nothing is stored)
   */
  boolean replace(int index, long version, CheckpointMeta meta);

  /** Where shard {@code index}'s pointer is kept, for messages (in etcd: its key). */
  String where(int index);

  /** A stored pointer and the version it was read at. */
  record Pointer(CheckpointMeta meta, long version) {}
}
