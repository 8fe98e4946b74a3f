package dev.paramserver.master.placement;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.rpc.Retry;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a shrink: shuts down the registered pservers at or above the new count, once they have
 * drained ({@link ScalingProperties#drainTime}): a trainer may still send one a request planned by
 * a map older than the last commit, or resend a push whose answer it lost; the pserver answers
 * MOVED (nothing applied) or that it is a duplicate. Once it is gone, such a request goes by the
 * committed map (docs/explanation/elastic.md). Each is asked over its admin endpoint, awaited until
 * it deregisters, and its checkpoint key is forgotten.
 */
final class EmptiedPservers {
  private static final Logger log = LoggerFactory.getLogger(EmptiedPservers.class);

  private final Coordinator coordinator;
  private final PlacementPservers pservers;
  private final ScalingProperties settings;
  private final String adminToken;
  private final Supplier<Retry> poll;

  /**
   * @param poll a new poll every {@link ScalingProperties#pollInterval} that stops when the master
   *     stops leading
   */
  EmptiedPservers(
      Coordinator coordinator,
      PlacementPservers pservers,
      ScalingProperties settings,
      String adminToken,
      Supplier<Retry> poll) {
    this.coordinator = coordinator;
    this.pservers = pservers;
    this.settings = settings;
    this.adminToken = adminToken;
    this.poll = poll;
  }

  /**
   * Shuts down the registered pservers at or above {@code n}; {@code draining} hears their indexes
   * (as "1, 2") before the drain wait, when there are any.
   */
  void shutDownFrom(int n, Consumer<String> draining) throws InterruptedException {
    String prefix = coordinator.keys().psPrefix();
    Map<Integer, String> emptied = new TreeMap<>();
    for (KeyValueStore.KeyValue kv : coordinator.kv().getPrefix(prefix)) {
      try {
        int index = Integer.parseInt(kv.key().substring(prefix.length()));
        if (index >= n) {
          emptied.put(index, kv.key());
        }
      } catch (NumberFormatException e) {
        // not a pserver registration
      }
    }
    if (emptied.isEmpty()) {
      return;
    }
    String names = emptied.keySet().stream().map(String::valueOf).collect(Collectors.joining(", "));
    draining.accept(names);
    log.info(
        "placement: pserver {} owns nothing now: it answers MOVED for {}, then it is shut down",
        names,
        settings.drainTime());
    long drained = System.nanoTime() + settings.drainTime().toNanos();
    poll.get()
        .until(
            "draining pserver " + names,
            attempt -> System.nanoTime() >= drained ? Optional.of(true) : Optional.empty());
    for (Map.Entry<Integer, String> e : emptied.entrySet()) {
      shutDown(e.getKey(), e.getValue());
    }
  }

  private void shutDown(int index, String registration) throws InterruptedException {
    if (!registeredWithin(index, registration, settings.drainTime())) {
      // it exited on its own, or it is not back from a lost lease in time: nothing to ask
      log.info("placement: pserver {} deregistered before it was asked to shut down", index);
      coordinator.kv().delete(coordinator.keys().checkpoint(index));
      return;
    }
    String adminAddress = pservers.status(index).getAdminAddress();
    if (adminAddress.isEmpty()) {
      throw new IllegalStateException(
          "pserver " + index + " has no admin address: stop it yourself, it owns nothing now");
    }
    log.info("placement: asking pserver {} to shut down", index);
    try {
      AdminClient.create(
              "pserver " + index, baseUrl(adminAddress), adminToken, Duration.ofSeconds(30))
          .shutdown();
    } catch (IOException ex) {
      throw new IllegalStateException(
          "pserver " + index + " did not take the shutdown: " + ex.getMessage(), ex);
    }
    long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
    poll.get()
        .until(
            "waiting for pserver " + index + " to deregister",
            attempt ->
                coordinator.kv().get(registration).isEmpty() || System.nanoTime() >= deadline
                    ? Optional.of(true)
                    : Optional.empty());
    coordinator.kv().delete(coordinator.keys().checkpoint(index));
    log.info("placement: pserver {} is gone", index);
  }

  /**
   * Whether {@code registration} is held, or held again within {@code wait}: an emptied pserver
   * that lost its lease registers again under its own index once the old lease has ended.
   */
  private boolean registeredWithin(int index, String registration, Duration wait)
      throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    return poll.get()
        .until(
            "waiting for pserver " + index + " to register again",
            attempt -> {
              if (coordinator.kv().get(registration).isPresent()) {
                return Optional.of(true);
              }
              return System.nanoTime() >= deadline ? Optional.of(false) : Optional.empty();
            });
  }

  private static String baseUrl(String adminAddress) {
    return adminAddress.startsWith("http") ? adminAddress : "http://" + adminAddress;
  }
}
