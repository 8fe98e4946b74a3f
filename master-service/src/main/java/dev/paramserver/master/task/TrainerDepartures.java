package dev.paramserver.master.task;

import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.coordination.KeyValueStore.WatchEvent;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes back a departed trainer's tasks at once instead of at their deadlines. A trainer registers
 * {@code trainers/<id>} under its etcd lease; the key is deleted when that lease ends (the process
 * died or lost etcd for a lease TTL), and it is put under another lease when a new process takes
 * the name (a restarted trainer). Either way the tasks held under that name belong to a process
 * that will not report them, and the k-th task of its last lease would otherwise wait k task
 * timeouts.
 *
 * <p>Only what is seen changing counts: a trainer that never registered (a client that does not use
 * etcd) keeps its tasks until their deadlines. The master acts only while it serves; the changes
 * are applied on a thread of this class, since the watch's own thread must not call etcd.
 */
public final class TrainerDepartures extends ExecutorLifecycle {
  private static final Logger log = LoggerFactory.getLogger(TrainerDepartures.class);
  private final MasterJob job;
  private final KeyValueStore kv;
  private final String prefix;
  // the lease each trainer was last seen registered under
  private final Map<String, Long> leases = new ConcurrentHashMap<>();
  private AutoCloseable watch;

  public TrainerDepartures(MasterJob job, KeyValueStore kv, String trainersPrefix, int phase) {
    super("master-trainer-departures", phase);
    this.job = job;
    this.kv = kv;
    this.prefix = trainersPrefix;
  }

  @Override
  void onStart(ScheduledExecutorService executor) {
    try {
      watch = kv.watchPrefix(prefix, this::onEvent);
      for (KeyValueStore.KeyValue registered : kv.getPrefix(prefix)) {
        leases.putIfAbsent(registered.key().substring(prefix.length()), registered.leaseId());
      }
    } catch (RuntimeException e) {
      // etcd is not reachable yet: departures are then noticed by the task timeouts alone
      log.warn("cannot watch the trainer registrations: {}", e.toString());
    }
  }

  private void onEvent(WatchEvent e) {
    String trainer = e.keyValue().key().substring(prefix.length());
    if (trainer.isEmpty()) {
      return;
    }
    String why;
    if (e.type() == WatchEvent.Type.DELETE) {
      leases.remove(trainer);
      why = "is gone (its etcd registration ended)";
    } else {
      Long before = leases.put(trainer, e.keyValue().leaseId());
      if (before == null || before == e.keyValue().leaseId()) {
        return;
      }
      why = "was replaced (a new process registered under its name)";
    }
    ScheduledExecutorService worker = executor();
    if (worker == null) {
      return;
    }
    try {
      worker.execute(
          () -> {
            try {
              job.trainerGone(trainer, why);
            } catch (RuntimeException ex) {
              // a refused write made the master step down; the deadlines still apply
              log.warn(
                  "taking back the tasks of trainer '{}' failed: {}", trainer, ex.getMessage());
            }
          });
    } catch (RejectedExecutionException stopping) {
      // stopped meanwhile: the master no longer serves
    }
  }

  @Override
  void onStop() {
    if (watch != null) {
      try {
        watch.close();
      } catch (Exception e) {
        log.debug("closing the trainer watch failed", e);
      }
      watch = null;
    }
  }
}
