package dev.paramserver.serving.registration;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.LeasedKeys;
import dev.paramserver.etcd.ServingReplicaRecord;
import dev.paramserver.service.LifecyclePhases;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * A following replica's registration in etcd: {@code serving/<replica id>} holds a {@link
 * ServingReplicaRecord} under the replica's lease (put again under a new lease when it is lost,
 * {@link LeasedKeys}). Registered once the gRPC server listens; then the record is rebuilt every
 * {@code interval} and written only when it changed, so a replica writes at most once per interval
 * whatever its rate of records. At shutdown (phase {@link LifecyclePhases#REGISTRATION}) the lease
 * is revoked: the key vanishes at once.
 *
 * <p>States: NEW → (address known) REGISTERED → CLOSED; NEW → CLOSED. A failed write is logged and
 * tried again at the next tick; the replica keeps serving either way.
 */
public final class ReplicaRegistration
    implements SmartLifecycle, ApplicationListener<GrpcServerStartedEvent> {
  private static final Logger log = LoggerFactory.getLogger(ReplicaRegistration.class);

  private final Coordinator coordinator;
  private final String key;
  private final String advertiseHost;
  private final Function<String, ServingReplicaRecord> recordAt;
  private final Duration interval;
  private final Duration leaseTtl;
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "serving-registration");
            t.setDaemon(true);
            return t;
          });
  private volatile boolean running;
  // Owned by the timer's thread (and close(), once the timer is stopped).
  private LeasedKeys keys;
  private ServingReplicaRecord written;
  private String lastFailure = "";

  /**
   * @param key the replica's key ({@code serving/<id>})
   * @param advertiseHost the host others reach this process at
   * @param recordAt the record to publish, given the replica's gRPC address
   * @param interval the least time between two writes
   * @param leaseTtl the lease's time-to-live: how long the key outlives a replica killed hard
   */
  public ReplicaRegistration(
      Coordinator coordinator,
      String key,
      String advertiseHost,
      Function<String, ServingReplicaRecord> recordAt,
      Duration interval,
      Duration leaseTtl) {
    this.coordinator = coordinator;
    this.key = key;
    this.advertiseHost = advertiseHost;
    this.recordAt = recordAt;
    this.interval = interval;
    this.leaseTtl = leaseTtl;
  }

  @Override
  public void onApplicationEvent(GrpcServerStartedEvent event) {
    registerAt(advertiseHost + ":" + event.getPort());
  }

  /** Registers the replica reached at {@code address} and keeps its record current. */
  public synchronized void registerAt(String address) {
    if (!running || timer.isShutdown()) {
      return;
    }
    log.info("registering the serving replica at {} as {}", address, key);
    timer.scheduleWithFixedDelay(
        () -> publish(address), 0, interval.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Writes the record if it changed since the last write; on the timer's thread. */
  private void publish(String address) {
    try {
      ServingReplicaRecord now = recordAt.apply(address);
      if (now.equals(written)) {
        return;
      }
      if (keys == null) {
        keys = LeasedKeys.open(coordinator, leaseTtl, Duration.ofMinutes(5), "serving " + key);
      }
      keys.put(key, now.encode());
      written = now;
      lastFailure = "";
    } catch (RuntimeException e) {
      // once per kind of failure, not once per tick
      String what = e.getClass().getSimpleName() + ": " + e.getMessage();
      if (!what.equals(lastFailure)) {
        lastFailure = what;
        log.warn("cannot write the serving replica's registration {}: {}", key, what);
      }
    }
  }

  @Override
  public synchronized void start() {
    running = true;
  }

  /** Stops writing and revokes the lease, so that the registration vanishes at once. */
  @Override
  public synchronized void stop() {
    running = false;
    timer.shutdownNow();
    try {
      if (!timer.awaitTermination(interval.toMillis() + 5_000, TimeUnit.MILLISECONDS)) {
        log.warn("the serving registration's last write did not end in time");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (keys != null) {
      keys.close();
      keys = null;
    }
  }

  @Override
  public synchronized boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return LifecyclePhases.REGISTRATION;
  }
}
