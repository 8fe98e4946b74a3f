package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.WalRecord;

/**
 * Sees every record the shard applies from its attachment on, in the log's order (a slot move
 * forwards those touching the moving slots to their new owner). Called under the shard's locks:
 * must not block, and must copy what it keeps (the record may be a view of received buffers).
 */
public interface RecordTap {
  void append(WalRecord record);
}
