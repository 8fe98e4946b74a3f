package dev.paramserver.pserver.persistence;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.shard.ParameterShard;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses and loads the state a claimed index starts from: the newest complete job-wide checkpoint
 * when the job is not running (checkpoint-consistency=job), else the index's own newest readable
 * checkpoint (or nothing). Replaying the log after it is the caller's ({@link CheckpointService}).
 */
final class CheckpointLoader {
  private static final Logger log = LoggerFactory.getLogger(CheckpointLoader.class);

  private final ParameterShard shard;
  private final CheckpointStore store;
  private final Coordinator coordinator;
  // Job-wide checkpoints, or null when checkpoint-consistency is independent.
  private final JobCheckpoints job;

  /**
   * What was loaded.
   *
   * @param last the checkpoint loaded, or null when there was none
   * @param fromSegment the log segment its cut is at (0: replay the whole log)
   * @param replay whether the log after it is replayed (false: a job-wide checkpoint was restored,
   *     the log is set aside)
   * @param restoredJob the id of the job-wide checkpoint restored, or -1
   */
  record Loaded(
      CheckpointService.LastCheckpoint last, long fromSegment, boolean replay, long restoredJob) {}

  CheckpointLoader(
      ParameterShard shard, CheckpointStore store, Coordinator coordinator, JobCheckpoints job) {
    this.shard = shard;
    this.store = store;
    this.coordinator = coordinator;
    this.job = job;
  }

  /**
   * Loads the newest state of {@code index}, streaming its table rows into fresh row stores: the
   * shard is emptied first (its calls are held meanwhile), so memory holds one copy of the tables
   * plus one entry being read, never the old content beside the new.
   */
  Loaded load(int index) {
    if (job != null) {
      Optional<Loaded> restored = loadJobCheckpoint(index);
      if (restored.isPresent()) {
        return restored.get();
      }
    }
    shard.reset();
    Optional<CheckpointStore.Loaded> loaded =
        store.load(index, () -> CheckpointService.restorer(shard));
    if (loaded.isEmpty()) {
      shard.reset();
      return new Loaded(null, 0, true, -1);
    }
    ShardCheckpoint cp = loaded.get().checkpoint();
    log.info(
        "pserver {} loaded checkpoint {} at step {}", index, loaded.get().path(), cp.getStep());
    return new Loaded(
        new CheckpointService.LastCheckpoint(
            loaded.get().path(), cp.getStep(), cp.getCreatedMs(), 0),
        cp.getWalSegment(),
        true,
        -1);
  }

  /**
   * Restores this shard's part of the newest complete job-wide checkpoint, if there is one and the
   * job is not running (see {@link #runningSince}: the job, or all its pservers and trainers,
   * restart).
   */
  private Optional<Loaded> loadJobCheckpoint(int index) {
    Optional<JobCheckpoints.Complete> complete;
    try {
      complete = job.newestComplete();
      if (complete.isEmpty() || !complete.get().shards().containsKey(index)) {
        log.info("no complete job-wide checkpoint: pserver {} loads its own newest", index);
        return Optional.empty();
      }
      if (complete.get().restoredBy().contains(index)) {
        log.info(
            "pserver {} restored job-wide checkpoint {} before: it loads its own newest checkpoint"
                + " and log, which go on from there",
            index,
            complete.get().id());
        return Optional.empty();
      }
      Optional<String> running = runningSince(index, complete.get().revision());
      if (running.isPresent()) {
        log.info(
            "pserver {} restarts into a running job ({} registered before job-wide checkpoint {}"
                + " was complete is still there): it loads its own newest checkpoint and log",
            index,
            running.get(),
            complete.get().id());
        return Optional.empty();
      }
    } catch (RuntimeException e) {
      log.warn("cannot read the job-wide checkpoints: {}", e.toString());
      return Optional.empty();
    }
    JobCheckpoints.Complete c = complete.get();
    CheckpointMeta meta = c.shards().get(index);
    shard.reset();
    try {
      store.loadFile(meta, CheckpointService.restorer(shard));
    } catch (java.io.IOException | RuntimeException e) {
      shard.reset();
      log.error(
          "job-wide checkpoint {} of pserver {} ({}) is unreadable: loading its own newest"
              + " checkpoint instead",
          c.id(),
          index,
          meta.getPath(),
          e);
      return Optional.empty();
    }
    log.info(
        "pserver {} restored job-wide checkpoint {} at step {} from {}: every shard of the job"
            + " restores the same step",
        index,
        c.id(),
        c.step(),
        meta.getPath());
    return Optional.of(
        new Loaded(
            new CheckpointService.LastCheckpoint(
                meta.getPath(), c.step(), meta.getTimestampMs(), 0),
            0,
            false,
            c.id()));
  }

  /**
   * Whether the job is still running: a trainer ({@code trainers/<id>}) or another pserver ({@code
   * ps/<idx>}) whose registration is older than {@code revision} (when the newest job-wide
   * checkpoint became complete) is still registered, so it trained or served past that checkpoint.
   * After a restart of the job every registration is newer (trainers and pservers of the new run
   * may register in any order).
   *
   * @return the key of such a registration, or empty
   */
  private Optional<String> runningSince(int index, long revision) {
    String own = coordinator.keys().ps(index);
    for (String prefix :
        List.of(coordinator.keys().trainersPrefix(), coordinator.keys().psPrefix())) {
      for (KeyValueStore.KeyValue k : coordinator.kv().getPrefix(prefix)) {
        if (k.createRevision() < revision && !k.key().equals(own)) {
          return Optional.of(k.key().substring(coordinator.keys().prefix().length()));
        }
      }
    }
    return Optional.empty();
  }
}
