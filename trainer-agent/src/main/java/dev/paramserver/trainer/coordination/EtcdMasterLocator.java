package dev.paramserver.trainer.coordination;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leading master's address as published in etcd ({@code master/addr}, under the leader's
 * lease): watched, and read afresh after a failure.
 */
public final class EtcdMasterLocator implements MasterLocator {
  private static final Logger log = LoggerFactory.getLogger(EtcdMasterLocator.class);

  private final Coordinator coordinator;
  private final String key;
  private final AutoCloseable watch;
  private volatile String watchedAddress;

  public EtcdMasterLocator(Coordinator coordinator) {
    this.coordinator = coordinator;
    this.key = coordinator.keys().masterAddr();
    this.watch =
        coordinator
            .kv()
            .watchPrefix(
                key,
                ev -> {
                  if (!ev.keyValue().key().equals(key)) {
                    return;
                  }
                  watchedAddress =
                      ev.type() == KeyValueStore.WatchEvent.Type.PUT
                          ? ev.keyValue().valueAsString()
                          : null;
                  log.info("master address changed to {}", watchedAddress);
                });
  }

  @Override
  public Optional<String> current() {
    String addr = watchedAddress;
    if (addr != null) {
      return Optional.of(addr);
    }
    try {
      return coordinator.kv().get(key).map(KeyValueStore.KeyValue::valueAsString);
    } catch (RuntimeException e) {
      log.warn("cannot read the master address from etcd: {}", e.getMessage());
      return Optional.empty();
    }
  }

  /** Forgets the watched address: the next look reads etcd (a new leader may have written it). */
  @Override
  public void failed(String address, String leaderHint) {
    watchedAddress = null;
  }

  @Override
  public String describe() {
    return "under " + key;
  }

  @Override
  public void close() {
    try {
      watch.close();
    } catch (Exception e) {
      log.debug("closing the master address watch failed", e);
    }
  }
}
