package dev.paramserver.pserver.k8s;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.BlockOwner;
import dev.paramserver.proto.v1.PlacementMap;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationListener;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * Scaling a StatefulSet up scales the job up ({@code paramserver.pserver.kubernetes.grow-job}): a
 * pserver whose configured index K (its pod ordinal) is at or above the job's {@code ps_desired}
 * asks the leader master to grow the job to K+1 pservers ({@code grow-only}: never lowers the
 * count, so pods starting together never undo each other), and retries with backoff until {@code
 * ps_desired} is above K or {@code grow-timeout} passed. It runs on its own thread once the gRPC
 * server listens, beside the registration, which claims K on its next attempt once {@code
 * ps_desired} allows it (the master then moves slots and blocks to it).
 *
 * <p>It does not ask while a shrink is under way, which would undo it (a pod at or above {@code
 * ps_desired} restarting while the job is moved away from it): while the committed placement or the
 * move in progress still gives an index at or above {@code ps_desired} a part (this one among
 * them), and while K's checkpoint key remains after a shrink emptied K (the master forgets it once
 * it has shut the emptied pserver down). It keeps reading until the shrink is over.
 */
public final class JobGrowth implements ApplicationListener<GrpcServerStartedEvent>, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(JobGrowth.class);

  private final Coordinator coordinator;
  private final PlacementStore placement;
  private final JobScaler master;
  private final int index;
  private final Duration timeout;
  private final Duration maxBackoff;
  private volatile boolean closed;
  private volatile Thread thread;

  /**
   * @param index this pserver's configured index (-1: none, nothing is done)
   * @param timeout how long to keep asking
   * @param maxBackoff the longest wait between two attempts
   */
  public JobGrowth(
      Coordinator coordinator, JobScaler master, int index, Duration timeout, Duration maxBackoff) {
    this.coordinator = coordinator;
    this.placement = new PlacementStore(coordinator);
    this.master = master;
    this.index = index;
    this.timeout = timeout;
    this.maxBackoff = maxBackoff;
  }

  @Override
  public synchronized void onApplicationEvent(GrpcServerStartedEvent event) {
    if (index < 0 || thread != null || closed) {
      return;
    }
    Thread t = new Thread(this::growJob, "pserver-grow-job");
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /**
   * Asks until {@code ps_desired} is above this pserver's index: true then, false when it gave up
   * (timeout, or closed).
   */
  public boolean growJob() {
    if (index < 0) {
      return true;
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    String key = coordinator.keys().psDesired();
    String[] lastError = {null};
    boolean[] asked = {false};
    String[] held = {null};
    Retry retry =
        new Retry(
            Duration.ofMillis(Math.min(200, maxBackoff.toMillis())),
            maxBackoff,
            () -> closed || System.nanoTime() > deadline);
    try {
      int desired =
          retry.until(
              "growing the job to " + (index + 1) + " pservers",
              attempt -> {
                OptionalInt d;
                try {
                  d = desired(key);
                } catch (RuntimeException e) {
                  warnOnce(lastError, "cannot read " + key + " from etcd: " + e.getMessage());
                  return Optional.empty();
                }
                if (d.isEmpty()) {
                  return Optional.empty(); // the first pserver's registration writes it
                }
                if (d.getAsInt() > index) {
                  return Optional.of(d.getAsInt());
                }
                Optional<String> shrink;
                try {
                  shrink = shrinking(d.getAsInt());
                } catch (RuntimeException e) {
                  warnOnce(lastError, "cannot read the placement from etcd: " + e.getMessage());
                  return Optional.empty();
                }
                if (shrink.isPresent()) {
                  if (!shrink.get().equals(held[0])) {
                    log.info(
                        "pserver index {} is not below {} = {}, but not asking to grow the job: {}",
                        index,
                        key,
                        d.getAsInt(),
                        shrink.get());
                    held[0] = shrink.get();
                  }
                  return Optional.empty(); // read again: the shrink may end
                }
                if (!asked[0]) {
                  log.info(
                      "pserver index {} is not below {} = {}: asking the leader master to grow the"
                          + " job to {} pservers",
                      index,
                      key,
                      d.getAsInt(),
                      index + 1);
                  asked[0] = true;
                }
                try {
                  master.growTo(index + 1);
                } catch (java.io.IOException e) {
                  warnOnce(
                      lastError,
                      "growing the job to " + (index + 1) + " pservers failed: " + e.getMessage());
                }
                return Optional.empty(); // read ps_desired again
              });
      if (asked[0]) {
        log.info("the job has {} pservers now: pserver index {} is one of them", desired, index);
      }
      return true;
    } catch (StoppedException e) {
      if (!closed) {
        log.error(
            "gave up growing the job to {} pservers after {} (last error: {}); this pserver keeps"
                + " waiting for index {} to be part of the job: scale the job with psctl scale",
            index + 1,
            timeout,
            lastError[0],
            index);
      }
      return false;
    }
  }

  /**
   * Why growing the job to this index + 1 would undo a shrink under way, or empty: the placement
   * written still gives an index at or above {@code desired} a part (slots, dense blocks, or the
   * move in progress is from or to it), or this index's checkpoint key remains, not placed (a
   * shrink emptied it and the master has not shut it down yet). Without a placement written the job
   * was never scaled: nothing is shrinking.
   */
  private Optional<String> shrinking(int desired) {
    PlacementStore.Read read = placement.read();
    if (read.map().isEmpty()) {
      return Optional.empty();
    }
    PlacementMap map = read.map().get();
    int highest = -1;
    for (int owner : map.getSlotOwnersList()) {
      highest = Math.max(highest, owner);
    }
    for (BlockOwner b : map.getDenseOwnersList()) {
      highest = Math.max(highest, b.getOwner());
    }
    if (read.move().isPresent()) {
      SlotMove m = read.move().get();
      highest = Math.max(highest, Math.max(m.getFrom(), m.getTo()));
    }
    if (highest >= desired) {
      return Optional.of(
          "the job is shrinking to "
              + desired
              + " pservers (the placement still gives pserver "
              + highest
              + " a part"
              + (read.places(index) ? ", this one too" : "")
              + ")");
    }
    if (coordinator.kv().get(coordinator.keys().checkpoint(index)).isPresent()) {
      return Optional.of(
          "a shrink emptied index "
              + index
              + " and the master has not shut it down yet ("
              + coordinator.keys().checkpoint(index)
              + " remains)");
    }
    return Optional.empty();
  }

  private OptionalInt desired(String key) {
    Optional<KeyValueStore.KeyValue> kv = coordinator.kv().get(key);
    if (kv.isEmpty()) {
      return OptionalInt.empty();
    }
    try {
      return OptionalInt.of(Integer.parseInt(kv.get().valueAsString().trim()));
    } catch (NumberFormatException e) {
      throw new IllegalStateException(key + " holds '" + kv.get().valueAsString() + "'", e);
    }
  }

  /** Logs a failure at WARN when it differs from the last one, else at DEBUG. */
  private static void warnOnce(String[] last, String message) {
    if (Objects.equals(last[0], message)) {
      log.debug("{}", message);
    } else {
      log.warn("{} (retrying)", message);
      last[0] = message;
    }
  }

  @Override
  public void close() {
    closed = true;
    Thread t = thread;
    if (t != null) {
      t.interrupt();
    }
  }
}
