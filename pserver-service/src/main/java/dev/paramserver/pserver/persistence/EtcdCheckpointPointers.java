package dev.paramserver.pserver.persistence;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.pserver.checkpoint.CheckpointPointers;
import java.util.Optional;

/**
 * The pointers to the shards' newest checkpoints in etcd: a {@link CheckpointMeta} under {@code
 * checkpoints/<idx>}, versioned by the key's mod revision.
 */
public final class EtcdCheckpointPointers implements CheckpointPointers {
  private final KeyValueStore kv;
  private final JobKeys keys;

  public EtcdCheckpointPointers(KeyValueStore kv, JobKeys keys) {
    this.kv = kv;
    this.keys = keys;
  }

  @Override
  public Optional<Pointer> read(int index) {
    String key = keys.checkpoint(index);
    return kv.get(key).map(v -> new Pointer(parse(key, v.value()), v.modRevision()));
  }

  @Override
  public boolean replace(int index, long version, CheckpointMeta meta) {
    return kv.compareAndSwap(keys.checkpoint(index), version, meta.toByteArray());
  }

  @Override
  public String where(int index) {
    return keys.checkpoint(index);
  }

  private static CheckpointMeta parse(String key, byte[] value) {
    try {
      return CheckpointMeta.parseFrom(value);
    } catch (InvalidProtocolBufferException e) {
      throw new CoordinationException(key + " does not hold a CheckpointMeta: " + e.getMessage());
    }
  }
}
