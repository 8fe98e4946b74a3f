package dev.paramserver.master.task;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.KeyValueStore.WatchEvent;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
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
 * <p>While this master does not serve (it lost its lease, or another master leads) what the watch
 * sees is not acted on; so each time it starts serving, before it answers, it reads the
 * registrations afresh and takes back at once the tasks of every holder that this process saw
 * registered and that is not registered then (a trainer that died, or that has not yet registered
 * again after losing its own lease: its late reports are refused as stale and its tasks trained
 * again). A holder never seen registered (a client that does not use etcd) keeps its tasks until
 * their deadlines. A watch broken by an outage resumes from its last revision (rebuilt from a fresh
 * read if that revision was compacted); one that cannot be opened is opened again every second. The
 * changes are applied on a thread of this class, since the watch's own thread must not call etcd.
 * The registrations it sees are the job's count of registered trainers ({@code min-trainers}).
 */
public final class TrainerDepartures extends ExecutorLifecycle {
  private static final Logger log = LoggerFactory.getLogger(TrainerDepartures.class);
  private final MasterJob job;
  private final KeyValueStore kv;
  private final String prefix;
  // the lease each trainer was last seen registered under
  private final Map<String, Long> leases = new ConcurrentHashMap<>();
  // every trainer this process saw registered: only those can be known to have departed
  private final Set<String> everRegistered = ConcurrentHashMap.newKeySet();
  private AutoCloseable watch;

  public TrainerDepartures(MasterJob job, KeyValueStore kv, String trainersPrefix, int phase) {
    super("master-trainer-departures", phase);
    this.job = job;
    this.kv = kv;
    this.prefix = trainersPrefix;
    job.onServing(this::reconcile);
    job.countRegisteredTrainers(leases::size);
  }

  @Override
  void onStart(ScheduledExecutorService executor) {
    openWatch(executor);
  }

  private void openWatch(ScheduledExecutorService executor) {
    try {
      AutoCloseable w = kv.watchPrefix(prefix, this::onEvent, this::reconcileLater);
      synchronized (this) {
        if (executor() != executor) {
          closeQuietly(w); // stopped meanwhile
          return;
        }
        watch = w;
      }
      for (KeyValueStore.KeyValue registered : kv.getPrefix(prefix)) {
        String trainer = registered.key().substring(prefix.length());
        leases.putIfAbsent(trainer, registered.leaseId());
        everRegistered.add(trainer);
      }
    } catch (RuntimeException e) {
      // etcd is not reachable yet: try again; meanwhile the task timeouts still apply
      log.warn("cannot watch the trainer registrations, retrying in 1 s: {}", e.toString());
      try {
        executor.schedule(
            () -> {
              synchronized (this) {
                if (watch != null || executor() != executor) {
                  return;
                }
              }
              openWatch(executor);
            },
            1,
            TimeUnit.SECONDS);
      } catch (RejectedExecutionException stopping) {
        // stopped meanwhile
      }
    }
  }

  /** The watch lost events (compacted away): rebuild from a fresh read, off the watch's thread. */
  private void reconcileLater() {
    ScheduledExecutorService worker = executor();
    if (worker == null || !job.isServing()) {
      return; // the next start of service reads afresh anyway
    }
    try {
      worker.execute(this::reconcile);
    } catch (RejectedExecutionException stopping) {
      // stopped meanwhile
    }
  }

  /**
   * Rebuilds who is registered from a fresh read of {@code trainers/} and takes back the tasks of
   * every holder seen registered before and not registered now; runs when this master starts
   * serving, before it answers, and when the watch lost events. If etcd cannot be read, tries again
   * every second while serving.
   */
  void reconcile() {
    Map<String, Long> registered = new java.util.HashMap<>();
    try {
      for (KeyValueStore.KeyValue k : kv.getPrefix(prefix)) {
        String trainer = k.key().substring(prefix.length());
        if (!trainer.isEmpty()) {
          registered.put(trainer, k.leaseId());
        }
      }
    } catch (RuntimeException e) {
      log.warn("cannot read the trainer registrations, retrying in 1 s: {}", e.toString());
      ScheduledExecutorService worker = executor();
      if (worker != null && job.isServing()) {
        try {
          worker.schedule(this::reconcile, 1, TimeUnit.SECONDS);
        } catch (RejectedExecutionException stopping) {
          // stopped meanwhile
        }
      }
      return;
    }
    leases.keySet().retainAll(registered.keySet());
    leases.putAll(registered);
    everRegistered.addAll(registered.keySet());
    for (String holder : job.holders()) {
      if (!registered.containsKey(holder) && everRegistered.contains(holder)) {
        release(
            holder,
            "is not registered in etcd (trainers/"
                + holder
                + ") as this master starts"
                + " leading");
      }
    }
  }

  private void release(String trainer, String why) {
    try {
      job.trainerGone(trainer, why);
    } catch (RuntimeException ex) {
      // a refused write made the master step down; the deadlines still apply
      log.warn("taking back the tasks of trainer '{}' failed: {}", trainer, ex.getMessage());
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
      everRegistered.add(trainer);
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
      worker.execute(() -> release(trainer, why));
    } catch (RejectedExecutionException stopping) {
      // stopped meanwhile: the master no longer serves
    }
  }

  @Override
  void onStop() {
    if (watch != null) {
      closeQuietly(watch);
      watch = null;
    }
  }

  private static void closeQuietly(AutoCloseable w) {
    try {
      w.close();
    } catch (Exception e) {
      log.debug("closing the trainer watch failed", e);
    }
  }
}
