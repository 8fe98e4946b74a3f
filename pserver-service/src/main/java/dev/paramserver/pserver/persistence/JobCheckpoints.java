package dev.paramserver.pserver.persistence;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.JobCheckpoint;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.shard.ParameterShard;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Job-wide checkpoints ({@code paramserver.pserver.checkpoint-consistency=job}): in synchronous
 * mode every shard cuts a checkpoint at the same step, so that the shards restored together hold a
 * model the job really held.
 *
 * <p>Pserver 0 proposes: it writes {@code checkpoints/job/<id>} = {@link JobCheckpoint} {id, step
 * s} with s a little ahead of its own step (about {@value #LEAD_SECONDS} s of steps at the recent
 * rate). Every pserver watches those keys; when its synchronous barrier applies step s it copies
 * the shard before step s+1 can be applied (it holds the barrier meanwhile), writes the copy to a
 * file of its own and records it under {@code checkpoints/job/<id>/ps/<index>}. An id is complete
 * when every shard recorded its file at step s. A shard that learns of an id only after it passed s
 * skips it; the id stays incomplete and a later one is proposed.
 *
 * <p>In synchronous mode every shard applies each step exactly once (a trainer pushes every shard
 * each step, and pushes step s+1 only after every shard acknowledged its push of step s, which a
 * shard does once it applied the step), so the shards' update counts agree and "step s" names the
 * same point of training on every shard.
 *
 * <p>Each shard keeps its files of the newest {@value #KEEP} complete ids (and of newer incomplete
 * ones) and deletes its older ones with their keys.
 */
final class JobCheckpoints implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(JobCheckpoints.class);
  static final int KEEP = 2;
  static final int LEAD_SECONDS = 2;
  static final int MIN_LEAD_STEPS = 3;

  private final ParameterShard shard;
  private final KeyValueStore kv;
  private final JobKeys keys;
  private final CheckpointStore store;
  private final ExecutorService writer;
  private final AutoCloseable watch;
  // The id this shard cuts at its step, guarded by this.
  private JobCheckpoint target;
  // Pserver 0's step rate: the step and time of its previous proposal.
  private long lastProposedStep = -1;
  private long lastProposedNanos;

  /**
   * A complete job-wide checkpoint: its id and step, each shard's file, the etcd revision at which
   * it became complete (its last key written), and the shards that restored it since.
   */
  record Complete(
      long id,
      long step,
      String initId,
      Map<Integer, CheckpointMeta> shards,
      long revision,
      java.util.Set<Integer> restoredBy) {}

  JobCheckpoints(ParameterShard shard, KeyValueStore kv, JobKeys keys, CheckpointStore store) {
    this.shard = shard;
    this.kv = kv;
    this.keys = keys;
    this.store = store;
    this.writer =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "pserver-job-checkpoint");
              t.setDaemon(true);
              return t;
            });
    shard.events().onSyncStepApplied(this::onStepApplied);
    this.watch = kv.watchPrefix(keys.jobCheckpointPrefix(), this::onEvent);
    // an id proposed before this pserver watched
    writer.execute(this::rereadNewest);
  }

  private void onEvent(KeyValueStore.WatchEvent e) {
    if (e.type() != KeyValueStore.WatchEvent.Type.PUT || !isHead(e.keyValue().key())) {
      return;
    }
    parseHead(e.keyValue()).ifPresent(this::aimAt);
  }

  private boolean isHead(String key) {
    return key.startsWith(keys.jobCheckpointPrefix())
        && key.indexOf('/', keys.jobCheckpointPrefix().length()) < 0;
  }

  private void rereadNewest() {
    try {
      List<JobCheckpoint> heads = new ArrayList<>();
      for (KeyValueStore.KeyValue k : kv.getPrefix(keys.jobCheckpointPrefix())) {
        if (isHead(k.key())) {
          parseHead(k).ifPresent(heads::add);
        }
      }
      heads.stream().max((a, b) -> Long.compare(a.getId(), b.getId())).ifPresent(this::aimAt);
    } catch (RuntimeException e) {
      log.warn("cannot read the job-wide checkpoints: {}", e.toString());
    }
  }

  /** Cuts at {@code head}'s step if this shard has not passed it. */
  private synchronized void aimAt(JobCheckpoint head) {
    if (target != null && target.getId() >= head.getId()) {
      return;
    }
    String initId = shard.initId();
    if (shard.mode() != TrainingMode.SYNC || initId == null || !initId.equals(head.getInitId())) {
      return;
    }
    if (shard.step() >= head.getStep()) {
      log.warn(
          "job-wide checkpoint {} at step {} came too late for pserver {} (at step {}): skipped",
          head.getId(),
          head.getStep(),
          shard.index(),
          shard.step());
      return;
    }
    target = head;
  }

  /** Runs holding the synchronous barrier, right after step {@code reached} was applied. */
  private void onStepApplied(long reached) {
    JobCheckpoint head;
    synchronized (this) {
      head = target;
      if (head == null || reached != head.getStep()) {
        return;
      }
      target = null;
    }
    ShardCheckpoint copy = shard.snapshot();
    int index = shard.index();
    writer.execute(() -> record(head, index, copy));
  }

  private void record(JobCheckpoint head, int index, ShardCheckpoint copy) {
    try {
      CheckpointMeta meta =
          store.writeFile(
              index,
              "job" + head.getId(),
              out -> {
                copy.writeTo(out);
                return copy.getStep();
              });
      kv.put(keys.jobCheckpointShard(head.getId(), index), meta.toByteArray());
      log.info(
          "pserver {} cut job-wide checkpoint {} at step {}: {}",
          index,
          head.getId(),
          copy.getStep(),
          meta.getPath());
      prune(index);
    } catch (RuntimeException e) {
      log.error(
          "pserver {} could not write its part of job-wide checkpoint {}: that id stays incomplete",
          index,
          head.getId(),
          e);
    }
  }

  /**
   * Pserver 0: proposes a new job-wide checkpoint a little ahead of the current step, unless the
   * shard is not in synchronous mode or an earlier proposal is still ahead.
   *
   * @return the proposal, or empty when none was made
   */
  Optional<JobCheckpoint> propose(int shards) {
    String initId = shard.initId();
    if (shard.index() != 0 || shard.mode() != TrainingMode.SYNC || initId == null) {
      return Optional.empty();
    }
    long step = shard.step();
    long lead = MIN_LEAD_STEPS;
    synchronized (this) {
      if (target != null && target.getStep() > step) {
        return Optional.empty(); // the last proposal is not reached yet
      }
      long now = System.nanoTime();
      if (lastProposedStep >= 0 && step > lastProposedStep && now > lastProposedNanos) {
        double perSecond = (step - lastProposedStep) / ((now - lastProposedNanos) / 1e9);
        lead = Math.max(lead, (long) Math.ceil(perSecond * LEAD_SECONDS));
      }
      lastProposedStep = step;
      lastProposedNanos = now;
    }
    // etcd is called without holding this monitor: the synchronous barrier takes it
    long id = 1;
    for (KeyValueStore.KeyValue k : kv.getPrefix(keys.jobCheckpointPrefix())) {
      if (isHead(k.key())) {
        id = Math.max(id, parseHead(k).map(h -> h.getId() + 1).orElse(id));
      }
    }
    JobCheckpoint head =
        JobCheckpoint.newBuilder()
            .setId(id)
            .setStep(step + lead)
            .setShards(shards)
            .setInitId(initId)
            .setCreatedMs(System.currentTimeMillis())
            .build();
    if (!kv.compareAndSwap(keys.jobCheckpoint(id), 0, head.toByteArray())) {
      return Optional.empty();
    }
    aimAt(head);
    log.info("proposed job-wide checkpoint {} at step {} (now at {})", id, head.getStep(), step);
    return Optional.of(head);
  }

  /** Every job-wide checkpoint in etcd, complete or not, by id. */
  private Map<Long, Entry> all() {
    Map<Long, Entry> out = new TreeMap<>();
    String prefix = keys.jobCheckpointPrefix();
    for (KeyValueStore.KeyValue k : kv.getPrefix(prefix)) {
      String rest = k.key().substring(prefix.length());
      int slash = rest.indexOf('/');
      long id;
      try {
        id = Long.parseLong(slash < 0 ? rest : rest.substring(0, slash));
      } catch (NumberFormatException e) {
        continue;
      }
      Entry entry = out.computeIfAbsent(id, i -> new Entry(new TreeMap<>()));
      if (slash < 0) {
        entry.revision = Math.max(entry.revision, k.modRevision());
        parseHead(k).ifPresent(h -> entry.head = h);
      } else if (rest.startsWith("/restored/", slash)) {
        try {
          entry.restoredBy.add(Integer.parseInt(rest.substring(slash + "/restored/".length())));
        } catch (NumberFormatException e) {
          log.warn("ignoring {}: {}", k.key(), e.toString());
        }
      } else if (rest.startsWith("/ps/", slash)) {
        entry.revision = Math.max(entry.revision, k.modRevision());
        try {
          int index = Integer.parseInt(rest.substring(slash + 4));
          entry.shards.put(index, CheckpointMeta.parseFrom(k.value()));
        } catch (NumberFormatException | InvalidProtocolBufferException e) {
          log.warn("ignoring {}: {}", k.key(), e.toString());
        }
      }
    }
    return out;
  }

  /** One id's head (null if missing) and shard files. */
  private static final class Entry {
    JobCheckpoint head;
    final Map<Integer, CheckpointMeta> shards;
    final java.util.Set<Integer> restoredBy = new java.util.TreeSet<>();
    long revision;

    Entry(Map<Integer, CheckpointMeta> shards) {
      this.shards = shards;
    }

    boolean complete() {
      if (head == null || shards.size() < head.getShards()) {
        return false;
      }
      for (int i = 0; i < head.getShards(); i++) {
        CheckpointMeta m = shards.get(i);
        if (m == null || m.getStep() != head.getStep()) {
          return false;
        }
      }
      return true;
    }
  }

  /** The newest job-wide checkpoint whose every shard recorded its file at the id's step. */
  Optional<Complete> newestComplete() {
    Complete newest = null;
    for (Map.Entry<Long, Entry> e : all().entrySet()) {
      Entry en = e.getValue();
      if (en.complete()) {
        newest =
            new Complete(
                e.getKey(),
                en.head.getStep(),
                en.head.getInitId(),
                Map.copyOf(en.shards),
                en.revision,
                java.util.Set.copyOf(en.restoredBy));
      }
    }
    return Optional.ofNullable(newest);
  }

  /**
   * Deletes this shard's files and keys of every id older than the oldest of the newest {@value
   * #KEEP} complete ids; pserver 0 also deletes those ids' heads.
   */
  private void prune(int index) {
    Map<Long, Entry> all = all();
    List<Long> complete = new ArrayList<>();
    all.forEach(
        (id, e) -> {
          if (e.complete()) {
            complete.add(id);
          }
        });
    if (complete.size() < KEEP) {
      return;
    }
    long oldestKept = complete.get(complete.size() - KEEP);
    for (Map.Entry<Long, Entry> e : all.entrySet()) {
      long id = e.getKey();
      if (id >= oldestKept) {
        break;
      }
      CheckpointMeta mine = e.getValue().shards.get(index);
      if (mine != null) {
        store.deleteFile(mine.getPath());
        kv.delete(keys.jobCheckpointShard(id, index));
      }
      if (e.getValue().restoredBy.contains(index)) {
        kv.delete(keys.jobCheckpointRestored(id, index));
      }
      if (index == 0 && e.getValue().head != null) {
        kv.delete(keys.jobCheckpoint(id));
      }
    }
  }

  private static Optional<JobCheckpoint> parseHead(KeyValueStore.KeyValue k) {
    try {
      return Optional.of(JobCheckpoint.parseFrom(k.value()));
    } catch (InvalidProtocolBufferException e) {
      log.warn("{} does not hold a JobCheckpoint: {}", k.key(), e.getMessage());
      return Optional.empty();
    }
  }

  /** The job-wide checkpoint this shard will cut at its step, if any. */
  synchronized Optional<JobCheckpoint> target() {
    return Optional.ofNullable(target);
  }

  /** Records that shard {@code index} restored job-wide checkpoint {@code id}. */
  void markRestored(long id, int index) {
    kv.put(keys.jobCheckpointRestored(id, index), new byte[0]);
  }

  /** Waits for the file being written, if any (tests, shutdown). */
  void awaitWrites() throws Exception {
    writer.submit(() -> {}).get(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    try {
      watch.close();
    } catch (Exception e) {
      log.debug("closing the job-checkpoint watch: {}", e.toString());
    }
    writer.shutdown();
    try {
      writer.awaitTermination(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
