package dev.paramserver.serving.replica;

import dev.paramserver.pserver.shard.ParameterShard;
import java.util.List;

/**
 * A whole model loaded at once, every shard restored: a job-wide checkpoint or a saved model file.
 *
 * @param origin what it was loaded from, for logs and status (a checkpoint id and step, a path)
 * @param checkpointId the job-wide checkpoint's id, or 0 for a model file
 * @param shards one restored shard per index
 */
public record Snapshot(String origin, long checkpointId, List<ParameterShard> shards) {
  public Snapshot {
    shards = List.copyOf(shards);
  }
}
