package dev.paramserver.serving.snapshot;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.JobCheckpoint;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job-wide checkpoints a job's pservers recorded in etcd, read-only: the head {@code
 * checkpoints/job/<id>} ({@link JobCheckpoint}: its step and shard count) and each shard's file
 * under {@code checkpoints/job/<id>/ps/<index>} ({@link CheckpointMeta}). An id is complete when
 * every shard recorded its file at the head's step (docs/explanation/checkpoints.md); only complete
 * ids are offered.
 */
public final class JobCheckpointCatalog {
  private static final Logger log = LoggerFactory.getLogger(JobCheckpointCatalog.class);

  /** A complete job-wide checkpoint: its id, step, initialisation and each shard's file. */
  public record Complete(long id, long step, String initId, Map<Integer, CheckpointMeta> files) {
    public int shards() {
      return files.size();
    }
  }

  private final KeyValueStore kv;
  private final JobKeys keys;

  public JobCheckpointCatalog(KeyValueStore kv, JobKeys keys) {
    this.kv = kv;
    this.keys = keys;
  }

  /** The newest complete id, if any. */
  public Optional<Complete> newest() {
    Complete newest = null;
    for (Map.Entry<Long, Parts> e : all().entrySet()) {
      Complete c = e.getValue().complete(e.getKey());
      if (c != null) {
        newest = c;
      }
    }
    return Optional.ofNullable(newest);
  }

  /** Id {@code id} when it is complete. */
  public Optional<Complete> byId(long id) {
    Parts p = all().get(id);
    return p == null ? Optional.empty() : Optional.ofNullable(p.complete(id));
  }

  private Map<Long, Parts> all() {
    String prefix = keys.jobCheckpointPrefix();
    Map<Long, Parts> out = new TreeMap<>();
    for (KeyValueStore.KeyValue k : kv.getPrefix(prefix)) {
      String rest = k.key().substring(prefix.length());
      int slash = rest.indexOf('/');
      try {
        long id = Long.parseLong(slash < 0 ? rest : rest.substring(0, slash));
        Parts parts = out.computeIfAbsent(id, i -> new Parts());
        if (slash < 0) {
          parts.head = JobCheckpoint.parseFrom(k.value());
        } else if (rest.startsWith("/ps/", slash)) {
          parts.files.put(
              Integer.parseInt(rest.substring(slash + 4)), CheckpointMeta.parseFrom(k.value()));
        }
      } catch (NumberFormatException | InvalidProtocolBufferException e) {
        log.warn("ignoring {}: {}", k.key(), e.toString());
      }
    }
    return out;
  }

  private static final class Parts {
    JobCheckpoint head;
    final Map<Integer, CheckpointMeta> files = new HashMap<>();

    Complete complete(long id) {
      if (head == null || head.getShards() < 1) {
        return null;
      }
      Map<Integer, CheckpointMeta> at = new TreeMap<>();
      for (int i = 0; i < head.getShards(); i++) {
        CheckpointMeta m = files.get(i);
        if (m == null || m.getStep() != head.getStep()) {
          return null;
        }
        at.put(i, m);
      }
      return new Complete(id, head.getStep(), head.getInitId(), Map.copyOf(at));
    }
  }
}
