package dev.paramserver.pserver.sync;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.pserver.shard.TrainerMembership;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The live trainers: the keys under {@code trainers/} in etcd, each held by its trainer's lease.
 * Watched for changes, and re-read every {@code refresh} in case a watch event was missed (for
 * example while etcd restarted).
 */
public final class EtcdTrainerMembership implements TrainerMembership, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EtcdTrainerMembership.class);

  private final KeyValueStore kv;
  private final String prefix;
  private final Set<String> live = ConcurrentHashMap.newKeySet();
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService refresher;
  private final AutoCloseable watch;

  public EtcdTrainerMembership(Coordinator coordinator, Duration refresh) {
    this.kv = coordinator.kv();
    this.prefix = coordinator.keys().trainersPrefix();
    this.watch = kv.watchPrefix(prefix, this::onEvent);
    this.refresher =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "pserver-membership");
              t.setDaemon(true);
              return t;
            });
    refreshQuietly();
    long ms = Math.max(100, refresh.toMillis());
    refresher.scheduleWithFixedDelay(this::refreshQuietly, ms, ms, TimeUnit.MILLISECONDS);
  }

  @Override
  public Set<String> live() {
    return Set.copyOf(live);
  }

  @Override
  public void subscribe(Runnable onChange) {
    listeners.add(onChange);
  }

  private void onEvent(KeyValueStore.WatchEvent event) {
    String id = event.keyValue().key().substring(prefix.length());
    boolean changed =
        event.type() == KeyValueStore.WatchEvent.Type.PUT ? live.add(id) : live.remove(id);
    if (changed) {
      log.info(
          "trainer '{}' {}",
          id,
          event.type() == KeyValueStore.WatchEvent.Type.PUT ? "joined" : "left");
      notifyListeners();
    }
  }

  private void refreshQuietly() {
    try {
      Set<String> now =
          kv.getPrefix(prefix).stream()
              .map(k -> k.key().substring(prefix.length()))
              .collect(Collectors.toSet());
      boolean changed = live.retainAll(now) | live.addAll(now);
      if (changed) {
        log.info("live trainers: {}", now);
        notifyListeners();
      }
    } catch (RuntimeException e) {
      log.debug("cannot read the trainers from etcd: {}", e.toString());
    }
  }

  private void notifyListeners() {
    for (Runnable l : listeners) {
      try {
        l.run();
      } catch (RuntimeException e) {
        log.warn("membership listener failed", e);
      }
    }
  }

  @Override
  public void close() {
    refresher.shutdownNow();
    try {
      watch.close();
    } catch (Exception e) {
      log.debug("closing the trainers watch failed: {}", e.toString());
    }
  }
}
