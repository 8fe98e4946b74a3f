package dev.paramserver.trainer.pserver;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.trainer.coordination.PserverRegistry;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pservers of the job as registered ({@code ps_desired} and {@code ps/<idx>}, read through the
 * trainer's {@link PserverRegistry}), with one channel each. Watches the registrations so a
 * restarted pserver's new address is used, and an index that registers later (a job growing) is
 * found; and watches the job's elastic placement ({@link PlacementWatch}), which decides how many
 * indexes there are.
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
  private final PlacementWatch placement;

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
    this.placement = new PlacementWatch(registry);
  }

  /**
   * Routes {@code layout} by the job's committed placement map from now on, replacing its routing
   * whenever a newer epoch is committed.
   */
  public void follow(ModelLayout layout) {
    placement.follow(layout);
  }

  /**
   * Waits (at most {@code maxMs}) until a request refused with {@code moved} may be re-split (see
   * {@link PlacementWatch#awaitSettled}).
   *
   * @return false when the time ran out first
   */
  boolean awaitSettled(Moved moved, long maxMs) throws InterruptedException {
    return placement.awaitSettled(moved, maxMs);
  }

  /**
   * Waits until {@code ps_desired} is set and that many pservers are registered; once the job has a
   * committed placement map, until every index that owns something in it is registered (an index
   * the map leaves empty, one being added or drained, is not waited for). A registration the watch
   * sees ends the wait at once (a pserver writes {@code ps_desired} before it registers), so a
   * trainer that starts first is not held up to a poll interval after the last pserver registered;
   * without one it looks again after {@code lookAgain}, in case an event was missed.
   *
   * @param lookAgain the longest wait between two reads of the registrations
   * @param retry the pause between attempts on top of that, kept short (it gives up when the
   *     trainer stops)
   * @return the number of pservers (the map's count)
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
      PlacementStore.Read read = registry.placement();
      int desired = read.map().map(PlacementMap::getPservers).orElseGet(this::desired);
      Set<Integer> needed = owners(read.map(), desired);
      refresh();
      int registered = 0;
      for (int i : needed) {
        if (addresses.containsKey(i)) {
          registered++;
        }
      }
      if (desired > 0 && registered == needed.size()) {
        count = desired;
        log.info("found {} pservers: {}", desired, addresses);
        return Optional.of(desired);
      }
      if (System.currentTimeMillis() - lastLog[0] > 5000) {
        log.info(
            "waiting for pservers: {} of {} registered",
            registered,
            desired == 0 ? "(ps_desired not set yet)" : needed.size());
        lastLog[0] = System.currentTimeMillis();
      }
    } catch (RuntimeException e) {
      log.warn("cannot read pserver registrations: {}", e.getMessage());
    }
    return Optional.empty();
  }

  /** The indexes that own a slot or block in {@code map}; without one, 0 .. desired-1. */
  static Set<Integer> owners(Optional<PlacementMap> map, int desired) {
    Set<Integer> out = new TreeSet<>();
    if (map.isEmpty()) {
      for (int i = 0; i < desired; i++) {
        out.add(i);
      }
      return out;
    }
    for (int o : map.get().getSlotOwnersList()) {
      out.add(o);
    }
    map.get().getDenseOwnersList().forEach(b -> out.add(b.getOwner()));
    return out;
  }

  private int desired() {
    return registry.desired();
  }

  /**
   * For pserver {@code index} that is not registered: a MOVED answer in its name when the committed
   * placement gives it nothing (a shrink emptied it, drained it and shut it down), so a request
   * planned by an older map is re-split by the committed one rather than waiting for a pserver that
   * will not come back; empty while the index owns something (it is restarting: wait for it).
   */
  Optional<Throwable> emptiedAndGone(int index) {
    PlacementStore.Read read = placement.latest();
    if (read.map().isEmpty() || owners(read.map(), 0).contains(index)) {
      return Optional.empty();
    }
    return Optional.of(
        RpcErrors.toStatus(
            ErrorReason.MOVED,
            "pserver "
                + index
                + " is gone and owns nothing at placement epoch "
                + read.epoch()
                + ": the request goes by that placement",
            Map.of("epoch", Long.toString(read.epoch()))));
  }

  /** Number of pservers when {@link #awaitAll} returned (the routing's count may change since). */
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
    placement.close();
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
