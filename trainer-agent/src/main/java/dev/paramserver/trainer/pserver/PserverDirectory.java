package dev.paramserver.trainer.pserver;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.Retry;
import io.grpc.ManagedChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pservers of the job as registered in etcd ({@code ps_desired} and {@code ps/<idx>}), with one
 * channel each. Watches the registrations so a restarted pserver's new address is used.
 */
public final class PserverDirectory implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PserverDirectory.class);

  private final Coordinator coordinator;
  private final Map<Integer, String> addresses = new ConcurrentHashMap<>();
  private final Map<Integer, ManagedChannel> channels = new HashMap<>();
  private final AutoCloseable watch;
  private final ChannelFactory channelFactory;
  // bumped on every registration change the watch sees; awaitAll waits on it
  private final Object changes = new Object();
  private long changeCount;
  private volatile int count;

  /** A directory whose channels come from {@code channelFactory}. */
  public PserverDirectory(Coordinator coordinator, ChannelFactory channelFactory) {
    this.coordinator = coordinator;
    this.channelFactory = channelFactory;
    String prefix = coordinator.keys().psPrefix();
    this.watch =
        coordinator
            .kv()
            .watchPrefix(
                prefix,
                ev -> {
                  Integer idx = parseIndex(prefix, ev.keyValue().key());
                  if (idx == null) {
                    return;
                  }
                  if (ev.type() == KeyValueStore.WatchEvent.Type.PUT) {
                    String addr = ev.keyValue().valueAsString();
                    String old = addresses.put(idx, addr);
                    if (!addr.equals(old)) {
                      log.info("pserver {} is at {}", idx, addr);
                      dropChannel(idx);
                    }
                  } else {
                    log.warn("pserver {} deregistered (its lease ended)", idx);
                    addresses.remove(idx);
                    dropChannel(idx);
                  }
                  signalChange();
                });
  }

  private static Integer parseIndex(String prefix, String key) {
    if (!key.startsWith(prefix)) {
      return null;
    }
    try {
      return Integer.parseInt(key.substring(prefix.length()));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * Waits until {@code ps_desired} is set and that many pservers are registered. A registration the
   * watch sees ends the wait at once (a pserver writes {@code ps_desired} before it registers), so
   * a trainer that starts first is not held up to a poll interval after the last pserver
   * registered; without one it looks again after {@code lookAgain}, in case an event was missed.
   *
   * @param lookAgain the longest wait between two reads of the registrations
   * @param retry the pause between attempts on top of that, kept short (it gives up when the
   *     trainer stops)
   * @return the number of pservers
   */
  public int awaitAll(Duration lookAgain, Retry retry) {
    long[] lastLog = {0};
    return retry.until(
        "waiting for pservers",
        attempt -> {
          long seen = changeCount();
          Optional<Integer> found = lookForAll(lastLog);
          if (found.isEmpty()) {
            awaitChange(seen, lookAgain);
          }
          return found;
        });
  }

  /**
   * As {@link #awaitAll(Duration, Retry)}, looking again after each of {@code retry}'s pauses or
   * sooner when a registration changes.
   */
  public int awaitAll(Retry retry) {
    return awaitAll(retry.max(), retry);
  }

  private long changeCount() {
    synchronized (changes) {
      return changeCount;
    }
  }

  private void signalChange() {
    synchronized (changes) {
      changeCount++;
      changes.notifyAll();
    }
  }

  /** Waits up to {@code timeout} for a registration change after the {@code seen}-th. */
  private void awaitChange(long seen, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (changes) {
      while (changeCount == seen) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return;
        }
        TimeUnit.NANOSECONDS.timedWait(changes, left);
      }
    }
  }

  /** One look at {@code ps_desired} and the registrations: the count once all are there. */
  private Optional<Integer> lookForAll(long[] lastLog) {
    try {
      int desired = desired();
      refresh();
      int registered = 0;
      for (int i = 0; i < desired; i++) {
        if (addresses.containsKey(i)) {
          registered++;
        }
      }
      if (desired > 0 && registered == desired) {
        count = desired;
        log.info("found {} pservers: {}", desired, addresses);
        return Optional.of(desired);
      }
      if (System.currentTimeMillis() - lastLog[0] > 5000) {
        log.info(
            "waiting for pservers: {} of {} registered",
            registered,
            desired == 0 ? "(ps_desired not set yet)" : desired);
        lastLog[0] = System.currentTimeMillis();
      }
    } catch (RuntimeException e) {
      log.warn("cannot read pserver registrations from etcd: {}", e.getMessage());
    }
    return Optional.empty();
  }

  private int desired() {
    return coordinator
        .kv()
        .get(coordinator.keys().psDesired())
        .map(kv -> Integer.parseInt(new String(kv.value(), StandardCharsets.UTF_8).trim()))
        .orElse(0);
  }

  /** Number of pservers (after {@link #awaitAll}). */
  public int count() {
    return count;
  }

  /** Re-reads every registration from etcd. */
  public void refresh() {
    String prefix = coordinator.keys().psPrefix();
    Map<Integer, String> fresh = new HashMap<>();
    for (KeyValueStore.KeyValue kv : coordinator.kv().getPrefix(prefix)) {
      Integer idx = parseIndex(prefix, kv.key());
      if (idx != null) {
        fresh.put(idx, kv.valueAsString());
      }
    }
    for (Map.Entry<Integer, String> e : fresh.entrySet()) {
      if (!e.getValue().equals(addresses.put(e.getKey(), e.getValue()))) {
        dropChannel(e.getKey());
      }
    }
    addresses.keySet().retainAll(fresh.keySet());
  }

  /** A stub for pserver {@code index}, or null while it is not registered. */
  public ParameterServerGrpc.ParameterServerFutureStub stub(int index) {
    synchronized (channels) {
      ManagedChannel ch = channels.get(index);
      if (ch == null) {
        String addr = addresses.get(index);
        if (addr == null) {
          return null;
        }
        ch = channelFactory.forAddress(addr);
        channels.put(index, ch);
      }
      return ParameterServerGrpc.newFutureStub(ch);
    }
  }

  public String address(int index) {
    return addresses.get(index);
  }

  /** Forgets the channel of a pserver that failed; the next call re-reads its address. */
  public void invalidate(int index) {
    dropChannel(index);
    try {
      coordinator
          .kv()
          .get(coordinator.keys().ps(index))
          .ifPresentOrElse(
              kv -> addresses.put(index, kv.valueAsString()), () -> addresses.remove(index));
    } catch (RuntimeException e) {
      log.warn("cannot re-read pserver {}'s address from etcd: {}", index, e.getMessage());
    }
  }

  private void dropChannel(int index) {
    ManagedChannel old;
    synchronized (channels) {
      old = channels.remove(index);
    }
    if (old != null) {
      old.shutdownNow();
    }
  }

  @Override
  public void close() {
    try {
      watch.close();
    } catch (Exception e) {
      log.debug("closing the pserver watch failed", e);
    }
    synchronized (channels) {
      channels.values().forEach(Channels::close);
      channels.clear();
    }
  }
}
