package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.PlacementStore;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pservers as registered in etcd: {@code ps_desired} and {@code ps/<idx>}, and the elastic
 * placement ({@code placement}, {@code placement_move}).
 */
public final class EtcdPserverRegistry implements PserverRegistry {
  private static final Logger log = LoggerFactory.getLogger(EtcdPserverRegistry.class);

  private final Coordinator coordinator;
  private final String prefix;
  private final PlacementStore placement;

  public EtcdPserverRegistry(Coordinator coordinator) {
    this.coordinator = coordinator;
    this.prefix = coordinator.keys().psPrefix();
    this.placement = new PlacementStore(coordinator);
  }

  @Override
  public PlacementStore.Read placement() {
    return placement.read();
  }

  /**
   * Reads the placement afresh on each change, on a thread of its own: etcd's watch thread must
   * never wait for an etcd call. Changes coming in a burst are read once.
   */
  @Override
  public AutoCloseable watchPlacement(Consumer<PlacementStore.Read> listener) {
    ExecutorService reader =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "placement-watch");
              t.setDaemon(true);
              return t;
            });
    AtomicBoolean queued = new AtomicBoolean();
    AutoCloseable watch =
        coordinator
            .kv()
            .watchPrefix(
                coordinator.keys().placement(),
                event -> {
                  if (queued.compareAndSet(false, true)) {
                    reader.execute(
                        () -> {
                          queued.set(false);
                          try {
                            listener.accept(placement.read());
                          } catch (RuntimeException e) {
                            log.warn("cannot read the job's placement: {}", e.getMessage());
                          }
                        });
                  }
                });
    return () -> {
      try {
        watch.close();
      } finally {
        reader.shutdownNow();
      }
    };
  }

  @Override
  public int desired() {
    return coordinator
        .kv()
        .get(coordinator.keys().psDesired())
        .map(kv -> Integer.parseInt(new String(kv.value(), StandardCharsets.UTF_8).trim()))
        .orElse(0);
  }

  @Override
  public Map<Integer, String> addresses() {
    Map<Integer, String> out = new HashMap<>();
    for (KeyValueStore.KeyValue kv : coordinator.kv().getPrefix(prefix)) {
      Integer idx = parseIndex(kv.key());
      if (idx != null) {
        out.put(idx, kv.valueAsString());
      }
    }
    return out;
  }

  @Override
  public Optional<String> address(int index) {
    return coordinator
        .kv()
        .get(coordinator.keys().ps(index))
        .map(KeyValueStore.KeyValue::valueAsString);
  }

  @Override
  public AutoCloseable watch(Listener listener) {
    return coordinator
        .kv()
        .watchPrefix(
            prefix,
            ev -> {
              Integer idx = parseIndex(ev.keyValue().key());
              if (idx == null) {
                return;
              }
              listener.changed(
                  idx,
                  ev.type() == KeyValueStore.WatchEvent.Type.PUT
                      ? ev.keyValue().valueAsString()
                      : null);
            });
  }

  private Integer parseIndex(String key) {
    if (!key.startsWith(prefix)) {
      return null;
    }
    try {
      return Integer.parseInt(key.substring(prefix.length()));
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
