package dev.paramserver.master.coordination;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.etcd.JobKeys;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.KeyValueStore.KeyValue;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.PserverEntry;
import dev.paramserver.proto.v1.SlotMove;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job's cluster map ({@code ps/}, {@code ps_backup/}, {@code ps_desired}, {@code trainers/},
 * and the elastic placement: {@code placement} and {@code placement_move}) for every Attend stream:
 * one etcd watch per prefix, shared by all subscribers and opened with the first. A burst of
 * changes is read once, {@link #COALESCE_MS} after its first event, in one transaction; subscribers
 * hear a map only when its content changed. The map is also re-read every {@link #REFRESH_MS} in
 * case a watch event was lost (etcd compacted it away).
 */
final class ClusterMapFeed implements AutoCloseable {
  static final long COALESCE_MS = 50;
  static final long REFRESH_MS = 5000;
  private static final Logger log = LoggerFactory.getLogger(ClusterMapFeed.class);

  private final KeyValueStore kv;
  private final JobKeys keys;
  private final ScheduledExecutorService executor;
  private final List<String> prefixes;
  private final Set<Consumer<ClusterMap>> subscribers = new CopyOnWriteArraySet<>();
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private final List<AutoCloseable> watches = new ArrayList<>();
  // the content (revision 0) of the last map sent to the subscribers by a refresh
  private ClusterMap lastSent;

  ClusterMapFeed(KeyValueStore kv, JobKeys keys, ScheduledExecutorService executor) {
    this.kv = kv;
    this.keys = keys;
    this.executor = executor;
    this.prefixes =
        List.of(
            keys.psPrefix(),
            keys.psBackupPrefix(),
            keys.psDesired(),
            keys.trainersPrefix(),
            keys.placement());
    executor.scheduleWithFixedDelay(
        this::refreshQuietly, REFRESH_MS, REFRESH_MS, TimeUnit.MILLISECONDS);
  }

  /**
   * Adds a subscriber and returns the map as etcd holds it now (read at once, not from a cache);
   * the subscriber hears every later change. Opens the watches if they are not open.
   */
  ClusterMap subscribe(Consumer<ClusterMap> subscriber) {
    openWatches();
    subscribers.add(subscriber);
    return read();
  }

  void unsubscribe(Consumer<ClusterMap> subscriber) {
    subscribers.remove(subscriber);
  }

  private synchronized void openWatches() {
    if (!watches.isEmpty()) {
      return;
    }
    try {
      for (String p : prefixes) {
        watches.add(kv.watchPrefix(p, e -> changed()));
      }
    } catch (RuntimeException e) {
      closeWatches(); // try again with the next subscriber; the periodic re-read covers meanwhile
      throw e;
    }
  }

  private void changed() {
    if (subscribers.isEmpty() || !scheduled.compareAndSet(false, true)) {
      return;
    }
    try {
      executor.schedule(
          () -> {
            scheduled.set(false);
            refreshQuietly();
          },
          COALESCE_MS,
          TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException stopping) {
      scheduled.set(false);
    }
  }

  private void refreshQuietly() {
    if (subscribers.isEmpty()) {
      return;
    }
    try {
      ClusterMap now = read();
      ClusterMap content = now.toBuilder().setRevision(0).build();
      synchronized (this) {
        if (content.equals(lastSent)) {
          return; // another key changed (the store's revision moved), not the map
        }
        lastSent = content;
      }
      for (Consumer<ClusterMap> s : subscribers) {
        s.accept(now);
      }
    } catch (RuntimeException e) {
      log.warn("cannot read the cluster map for the attending trainers: {}", e.toString());
    }
  }

  /** Reads the map as etcd holds it now (one transaction). */
  ClusterMap read() {
    KeyValueStore.PrefixesRead r = kv.getPrefixes(prefixes);
    Map<Integer, String> backups = new TreeMap<>();
    for (KeyValue b : r.under(keys.psBackupPrefix())) {
      int index = index(b.key(), keys.psBackupPrefix());
      if (index >= 0) {
        backups.put(index, b.valueAsString());
      }
    }
    List<PserverEntry> pservers = new ArrayList<>();
    for (KeyValue p : r.under(keys.psPrefix())) {
      int index = index(p.key(), keys.psPrefix());
      if (index >= 0) {
        pservers.add(
            PserverEntry.newBuilder()
                .setIndex(index)
                .setAddress(p.valueAsString())
                .setBackupAddress(backups.getOrDefault(index, ""))
                .setEpoch(p.createRevision())
                .build());
      }
    }
    pservers.sort((a, b) -> Integer.compare(a.getIndex(), b.getIndex()));
    ClusterMap.Builder map =
        ClusterMap.newBuilder()
            .setRevision(r.revision())
            .setPserversDesired(desired(r.under(keys.psDesired())))
            .addAllPservers(pservers);
    for (KeyValue t : r.under(keys.trainersPrefix())) {
      map.addTrainers(t.key().substring(keys.trainersPrefix().length()));
    }
    // the prefix holds both keys of the placement: the committed map and the move in progress
    for (KeyValue p : r.under(keys.placement())) {
      try {
        if (p.key().equals(keys.placement())) {
          map.setPlacement(PlacementMap.parseFrom(p.value()));
        } else if (p.key().equals(keys.placementMove())) {
          map.setPlacementMove(SlotMove.parseFrom(p.value()));
        }
      } catch (InvalidProtocolBufferException e) {
        log.warn("{} does not hold a placement record: {}", p.key(), e.getMessage());
      }
    }
    return map.build();
  }

  private int desired(List<KeyValue> kvs) {
    for (KeyValue kv : kvs) {
      if (kv.key().equals(keys.psDesired())) {
        try {
          return Math.max(0, Integer.parseInt(kv.valueAsString().trim()));
        } catch (NumberFormatException e) {
          log.warn("{} holds '{}', not a pserver count", kv.key(), kv.valueAsString());
        }
      }
    }
    return 0;
  }

  private static int index(String key, String prefix) {
    try {
      return Integer.parseInt(key.substring(prefix.length()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private synchronized void closeWatches() {
    for (AutoCloseable w : watches) {
      try {
        w.close();
      } catch (Exception e) {
        log.debug("closing a cluster-map watch failed", e);
      }
    }
    watches.clear();
  }

  @Override
  public void close() {
    subscribers.clear();
    closeWatches();
  }
}
