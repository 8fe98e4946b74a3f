package dev.paramserver.master.election;

import dev.paramserver.etcd.KeyValueStore;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The leader's address, {@code master/addr}, kept current by a watch (for NOT_LEADER answers). */
final class LeaderAddress implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LeaderAddress.class);
  private final KeyValueStore kv;
  private final String key;
  private volatile String address;
  private volatile AutoCloseable watch;

  LeaderAddress(KeyValueStore kv, String key) {
    this.kv = kv;
    this.key = key;
  }

  /** Starts watching, unless the watch already runs. Safe to call again after a failure. */
  synchronized void start() {
    if (watch != null) {
      return;
    }
    try {
      watch =
          kv.watchPrefix(
              key,
              e -> {
                if (!e.keyValue().key().equals(key)) {
                  return;
                }
                address =
                    e.type() == KeyValueStore.WatchEvent.Type.PUT
                        ? e.keyValue().valueAsString()
                        : null;
              });
      address = kv.get(key).map(KeyValueStore.KeyValue::valueAsString).orElse(null);
    } catch (RuntimeException e) {
      log.warn("cannot watch {} yet: {}", key, e.toString());
    }
  }

  Optional<String> get() {
    return Optional.ofNullable(address);
  }

  @Override
  public synchronized void close() {
    AutoCloseable w = watch;
    watch = null;
    if (w != null) {
      try {
        w.close();
      } catch (Exception e) {
        log.debug("closing the watch of {} failed", key, e);
      }
    }
  }
}
