package dev.paramserver.trainer.pserver;

import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.Retry;
import dev.paramserver.trainer.coordination.PserverRegistry;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pservers of the job as registered ({@code ps_desired} and {@code ps/<idx>}, read through the
 * trainer's {@link PserverRegistry}), with one channel each. Watches the registrations so a
 * restarted pserver's new address is used.
 */
public final class PserverDirectory implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PserverDirectory.class);

  private final PserverRegistry registry;
  private final Map<Integer, String> addresses = new ConcurrentHashMap<>();
  private final Map<Integer, ManagedChannel> channels = new HashMap<>();
  private final AutoCloseable watch;
  private final ChannelFactory channelFactory;
  // bumped on every registration change the watch sees; awaitAll waits on it
  private final Object changes = new Object();
  private long changeCount;
  private volatile int count;

  /**
   * A directory of the pservers in {@code registry}, whose channels come from {@code
   * channelFactory}.
   */
  public PserverDirectory(PserverRegistry registry, ChannelFactory channelFactory) {
    this.registry = registry;
    this.channelFactory = channelFactory;
    this.watch =
        registry.watch(
            (idx, addr) -> {
              if (addr != null) {
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
      log.warn("cannot read pserver registrations: {}", e.getMessage());
    }
    return Optional.empty();
  }

  private int desired() {
    return registry.desired();
  }

  /** Number of pservers (after {@link #awaitAll}). */
  public int count() {
    return count;
  }

  /** Re-reads every registration. */
  public void refresh() {
    Map<Integer, String> fresh = registry.addresses();
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
      registry
          .address(index)
          .ifPresentOrElse(addr -> addresses.put(index, addr), () -> addresses.remove(index));
    } catch (RuntimeException e) {
      log.warn("cannot re-read pserver {}'s address: {}", index, e.getMessage());
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
