package dev.paramserver.pserver.replication.harness;

import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.LeaderElection;
import dev.paramserver.etcd.Lease;
import dev.paramserver.etcd.ShardSyncRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * etcd's semantics as far as replication uses them, in memory: revisions (a key's create revision
 * is a primary's epoch), leases whose end deletes their keys, and prefix watches whose events
 * arrive in order on one event thread, after the write returned (as jetcd delivers them). Leases
 * never expire on their own: a test ends one with {@link Lease#revoke()}, or with {@link
 * #expire(Lease)} as etcd ends the lease of a paused holder (its keys vanish while the holder still
 * believes in it). {@link #unreachable(boolean)} makes every read fail as an etcd that does not
 * answer.
 */
public final class InMemoryCoordinator implements Coordinator {
  private final JobKeys keys = new JobKeys("harness");
  private final Store store;

  /** Watch events on a thread of its own. */
  public InMemoryCoordinator() {
    this(
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "harness-etcd-events");
              t.setDaemon(true);
              return t;
            }));
  }

  /** Watch events, in order, on {@code events} (a serial executor: a simulation's). */
  InMemoryCoordinator(ExecutorService events) {
    this.store = new Store(events);
  }

  /**
   * An injected defect, to show that the simulation finds one: from now on a write that records a
   * shard's backup out of sync is answered as done but not made (as if the primary skipped it).
   */
  void skipOutOfSyncRecords() {
    store.skipOutOfSync = true;
  }

  @Override
  public JobKeys keys() {
    return keys;
  }

  @Override
  public KeyValueStore kv() {
    return store;
  }

  @Override
  public Lease grantLease(Duration ttl) {
    return new MemoryLease(store, store.leaseIds.incrementAndGet(), ttl);
  }

  @Override
  public LeaderElection election(String electionKey) {
    throw new UnsupportedOperationException("the replication harness runs no election");
  }

  @Override
  public int claimIndex(String prefix, int max, byte[] value, Lease lease, Duration timeout) {
    for (int i = 0; i < max; i++) {
      if (store.putIfAbsent(prefix + i, value, lease)) {
        return i;
      }
    }
    throw new CoordinationException("no free index under " + prefix + " below " + max);
  }

  @Override
  public boolean isConnected() {
    return !store.unreachable;
  }

  /**
   * etcd expires {@code lease} while its holder is paused: its keys vanish (watchers see them go),
   * nothing can be written under it any more, but the holder's {@link Lease#isAlive()} stays true
   * (it has not run its keep-alive loop since).
   */
  void expire(Lease lease) {
    store.expired.add(lease.id());
    store.deleteLeased(lease.id());
  }

  /** From now on (until called with false) every read fails, as an etcd that does not answer. */
  void unreachable(boolean unreachable) {
    store.unreachable = unreachable;
  }

  /**
   * Holds the next read of {@code key} made by a thread whose name starts with {@code thread} (as a
   * slow etcd answer would) until {@link ReadHold#release()}.
   */
  ReadHold holdNextRead(String key, String thread) {
    ReadHold hold = new ReadHold(key, thread);
    store.holds.add(hold);
    return hold;
  }

  /** A read held by {@link #holdNextRead}. */
  static final class ReadHold {
    private final String key;
    private final String thread;
    private final java.util.concurrent.CountDownLatch held =
        new java.util.concurrent.CountDownLatch(1);
    private final java.util.concurrent.CountDownLatch released =
        new java.util.concurrent.CountDownLatch(1);

    private ReadHold(String key, String thread) {
      this.key = key;
      this.thread = thread;
    }

    private boolean matches(String k) {
      return key.equals(k) && Thread.currentThread().getName().startsWith(thread);
    }

    /** True once the read is being held. */
    boolean holding() {
      return held.getCount() == 0;
    }

    /** Lets the held read (and any later one) go on. */
    void release() {
      released.countDown();
    }

    private void hold() {
      held.countDown();
      try {
        if (!released.await(30, java.util.concurrent.TimeUnit.SECONDS)) {
          throw new CoordinationException("get " + key + ": held read never released (harness)");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CoordinationException("get " + key + ": interrupted (harness)");
      }
    }
  }

  /** Reads of {@code key} so far. */
  long reads(String key) {
    return store.reads.getOrDefault(key, 0L);
  }

  @Override
  public void close() {
    store.events.shutdownNow();
  }

  private static final class MemoryLease implements Lease {
    private final Store store;
    private final long id;
    private final Duration ttl;
    private volatile boolean alive = true;

    MemoryLease(Store store, long id, Duration ttl) {
      this.store = store;
      this.id = id;
      this.ttl = ttl;
    }

    @Override
    public long id() {
      return id;
    }

    @Override
    public Duration ttl() {
      return ttl;
    }

    @Override
    public boolean isAlive() {
      return alive;
    }

    @Override
    public void onLost(Runnable listener) {
      // never lost: only revoked
    }

    @Override
    public void revoke() {
      if (alive) {
        alive = false;
        store.deleteLeased(id);
      }
    }
  }

  private static final class Store implements KeyValueStore {
    private final AtomicLong leaseIds = new AtomicLong();
    private final java.util.Set<Long> expired = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final Map<String, Long> reads = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile boolean unreachable;
    private volatile boolean skipOutOfSync;
    private final ExecutorService events;

    Store(ExecutorService events) {
      this.events = events;
    }

    // Guarded by this.
    private final TreeMap<String, KeyValue> data = new TreeMap<>();
    private final List<Watch> watches = new ArrayList<>();
    private long revision;

    private record Watch(String prefix, Consumer<WatchEvent> listener) {}

    private final java.util.Queue<ReadHold> holds =
        new java.util.concurrent.ConcurrentLinkedQueue<>();

    @Override
    public Optional<KeyValue> get(String key) {
      for (ReadHold h : holds) {
        if (h.matches(key) && holds.remove(h)) {
          h.hold(); // outside the store's monitor: other calls go on
        }
      }
      return read(key);
    }

    private synchronized Optional<KeyValue> read(String key) {
      reads.merge(key, 1L, Long::sum);
      if (unreachable) {
        throw new CoordinationException("get " + key + ": etcd did not answer (harness)");
      }
      return Optional.ofNullable(data.get(key));
    }

    @Override
    public synchronized List<KeyValue> getPrefix(String prefix) {
      return data.tailMap(prefix, true).values().stream()
          .takeWhile(kv -> kv.key().startsWith(prefix))
          .toList();
    }

    @Override
    public long put(String key, byte[] value) {
      return write(key, value, 0);
    }

    @Override
    public long put(String key, byte[] value, Lease lease) {
      return write(key, value, lease.id());
    }

    @Override
    public synchronized boolean putIfAbsent(String key, byte[] value, Lease lease) {
      if (data.containsKey(key) || !lease.isAlive() || expired.contains(lease.id())) {
        return false;
      }
      write(key, value, lease.id());
      return true;
    }

    @Override
    public synchronized boolean compareAndSwap(String key, long expectedModRevision, byte[] value) {
      KeyValue now = data.get(key);
      long mod = now == null ? 0 : now.modRevision();
      if (mod != expectedModRevision) {
        return false;
      }
      write(key, value, 0);
      return true;
    }

    @Override
    public synchronized boolean commitIfHeld(
        String fenceKey, long fenceCreateRevision, Map<String, byte[]> puts, List<String> deletes) {
      if (unreachable) {
        throw new CoordinationException("commit fenced on " + fenceKey + ": etcd did not answer");
      }
      KeyValue fence = data.get(fenceKey);
      if (fence == null || fence.createRevision() != fenceCreateRevision) {
        return false;
      }
      if (skipOutOfSync
          && puts.entrySet().stream()
              .anyMatch(
                  e ->
                      e.getKey().contains("/ps_sync/")
                          && !ShardSyncRecord.decode(e.getValue()).inSync())) {
        return true;
      }
      puts.forEach((k, v) -> write(k, v, 0));
      deletes.forEach(this::delete);
      return true;
    }

    @Override
    public synchronized boolean commitIfRevisions(
        Map<String, Long> modRevisions, Map<String, byte[]> puts, List<String> deletes) {
      if (unreachable) {
        throw new CoordinationException("commit fenced on revisions: etcd did not answer");
      }
      for (Map.Entry<String, Long> e : modRevisions.entrySet()) {
        KeyValue now = data.get(e.getKey());
        if ((now == null ? 0 : now.modRevision()) != e.getValue()) {
          return false;
        }
      }
      puts.forEach((k, v) -> write(k, v, 0));
      deletes.forEach(this::delete);
      return true;
    }

    @Override
    public synchronized void delete(String key) {
      KeyValue old = data.remove(key);
      if (old != null) {
        revision++;
        publish(
            new WatchEvent(WatchEvent.Type.DELETE, new KeyValue(key, new byte[0], 0, revision, 0)));
      }
    }

    private synchronized void deleteLeased(long leaseId) {
      List<String> leased =
          data.values().stream().filter(kv -> kv.leaseId() == leaseId).map(KeyValue::key).toList();
      leased.forEach(this::delete);
    }

    private synchronized long write(String key, byte[] value, long leaseId) {
      revision++;
      KeyValue old = data.get(key);
      KeyValue kv =
          new KeyValue(
              key, value.clone(), old == null ? revision : old.createRevision(), revision, leaseId);
      data.put(key, kv);
      publish(new WatchEvent(WatchEvent.Type.PUT, kv));
      return revision;
    }

    /** Delivers the event to the watches of its key, in write order, on the event thread. */
    private void publish(WatchEvent event) {
      for (Watch w : watches) {
        if (event.keyValue().key().startsWith(w.prefix())) {
          events.execute(() -> w.listener().accept(event));
        }
      }
    }

    @Override
    public synchronized AutoCloseable watchPrefix(String prefix, Consumer<WatchEvent> listener) {
      Watch w = new Watch(prefix, listener);
      watches.add(w);
      return () -> {
        synchronized (Store.this) {
          watches.remove(w);
        }
      };
    }
  }
}
