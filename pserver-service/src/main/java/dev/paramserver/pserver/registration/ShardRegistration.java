package dev.paramserver.pserver.registration;

import dev.paramserver.etcd.CoordinationException;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.placement.PlacementFollower;
import dev.paramserver.pserver.replication.Replication;
import dev.paramserver.pserver.replication.ShardClaims;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.service.LifecyclePhases;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;
import org.springframework.stereotype.Component;

/**
 * Registers this pserver in etcd once its gRPC server listens: writes {@code ps_desired} if absent,
 * grants a lease and claims {@code ps/<idx>} with the gRPC address as value (the configured {@code
 * paramserver.pserver.index} when it is free, else the lowest free index), then loads that index's
 * checkpoint. An index at or above {@code ps_desired} that the placement still gives slots or
 * blocks (the old owner of a shrink's moves, restarted) is claimed back, and no other; so is the
 * index this process held when it lost its lease after a shrink emptied it (the coordinator drains
 * and shuts down that index; taking a free one would load another pserver's checkpoint instead). A
 * lost lease triggers a new claim, which tries the index held before first. On shutdown revokes the
 * lease.
 *
 * <p>The address published is {@code paramserver.advertise-host} and the gRPC port, or {@code
 * paramserver.pserver.advertise-port} when that is set (above 0): the port others dial when it is
 * not the one the server listens on, for example behind a port mapping or a proxy.
 */
@Component
public final class ShardRegistration
    implements SmartLifecycle, ApplicationListener<GrpcServerStartedEvent> {
  private static final Logger log = LoggerFactory.getLogger(ShardRegistration.class);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

  private final Coordinator coordinator;
  private final ParameterShard shard;
  private final ShardLifecycle lifecycle;
  private final PserverProperties properties;
  private final ObjectProvider<ShardPersistence> persistence;
  private final Replication replication;
  private final PlacementFollower placement;
  private final String advertiseHost;
  private final int advertisePort;
  private final Duration leaseTtl;
  private final ExecutorService worker =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "pserver-registration");
            t.setDaemon(true);
            return t;
          });

  private volatile RegistrationState state = RegistrationState.NEW;
  private volatile boolean running;
  private volatile String address;
  private volatile Lease lease;

  public ShardRegistration(
      Coordinator coordinator,
      ParameterShard shard,
      ShardLifecycle lifecycle,
      PserverProperties properties,
      ObjectProvider<ShardPersistence> persistence,
      Replication replication,
      PlacementFollower placement,
      @Value("${paramserver.advertise-host:127.0.0.1}") String advertiseHost,
      @Value("${paramserver.etcd.lease-ttl:10s}") Duration leaseTtl) {
    this.coordinator = coordinator;
    this.shard = shard;
    this.lifecycle = lifecycle;
    this.properties = properties;
    this.persistence = persistence;
    this.replication = replication;
    this.placement = placement;
    this.advertiseHost = advertiseHost;
    this.advertisePort = properties.advertisePort();
    this.leaseTtl = leaseTtl;
    replication.onRoleLost(this::onRoleLost);
  }

  @Override
  public void onApplicationEvent(GrpcServerStartedEvent event) {
    address = advertiseHost + ":" + (advertisePort > 0 ? advertisePort : event.getPort());
    log.info("gRPC server listens on port {}; registering as {}", event.getPort(), address);
    if (moveTo(RegistrationState.REGISTERING)) {
      worker.execute(this::register);
    }
  }

  private synchronized boolean moveTo(RegistrationState next) {
    if (!state.canMoveTo(next)) {
      return false;
    }
    log.debug("registration {} -> {}", state, next);
    state = next;
    return true;
  }

  /** Claims an index; runs on the worker thread while the state is REGISTERING. */
  private void register() {
    Retry retry =
        new Retry(
            Duration.ofMillis(200),
            MAX_BACKOFF,
            () -> state != RegistrationState.REGISTERING || Thread.currentThread().isInterrupted());
    try {
      retry.until("registering", attempt -> registerOnce());
    } catch (StoppedException e) {
      log.debug("registration ends: {}", e.getMessage());
    }
  }

  /** One attempt to claim an index: empty if it failed and should be retried. */
  private Optional<Integer> registerOnce() throws InterruptedException {
    Lease granted = null;
    try {
      int desired = ensureDesired();
      // the N sparse rows are routed among: checked against the index claimed below
      lifecycle.routeRowsAmong(desired);
      granted = coordinator.grantLease(leaseTtl);
      // the shard held before (served or backed up) first: its state is here
      int last = lifecycle.lastShard();
      int preferred = last >= 0 ? last : properties.index();
      if (replication.enabled()) {
        return registerReplicated(desired, preferred, granted);
      }
      if (preferred >= desired && (last == preferred || placement.places(preferred))) {
        return claimStillPlaced(preferred, desired, granted);
      }
      if (preferred >= desired) {
        log.warn(
            "paramserver.pserver.index {} is outside [0, {}) ({} = {}): claiming the lowest"
                + " free index instead",
            preferred,
            desired,
            coordinator.keys().psDesired(),
            desired);
      }
      int claimed =
          coordinator.claimIndex(
              coordinator.keys().psPrefix(),
              desired,
              address.getBytes(StandardCharsets.UTF_8),
              granted,
              properties.registerTimeout(),
              preferred);
      return Optional.of(serve(claimed, desired, granted));
    } catch (InterruptedException e) {
      revokeQuietly(granted);
      throw e;
    } catch (RuntimeException e) {
      lifecycle.claimFailed(e.toString());
      revokeQuietly(granted);
      log.warn("registration failed, retrying: {}", e.toString());
      return Optional.empty();
    }
  }

  /** {@code claimed} is this pserver's under {@code granted}: loads its state and serves it. */
  private int serve(int claimed, int desired, Lease granted) {
    lease = granted;
    onClaimed(claimed);
    // the slots and blocks the committed placement gives the index (docs/explanation/elastic.md)
    placement.follow(desired);
    lifecycle.serve();
    if (registered(granted)) {
      log.info("registered as pserver {} ({}) under lease {}", claimed, address, granted.id());
    }
    return claimed;
  }

  /**
   * {@code index}, at or above {@code ps_desired}, still has a part in the placement (a shrink is
   * moving its slots and blocks away, and only this index's checkpoint and log hold them), or this
   * process held it until its lease was lost (a shrink emptied it: the coordinator waits to drain
   * and shut it down). Claims that index and no other (the lowest free one would load another
   * index's state and leave the shrink without its old owner); while {@code ps/<index>} is still
   * held (by the lease of this pserver's earlier life, until it expires) the attempt is retried.
   */
  private Optional<Integer> claimStillPlaced(int index, int desired, Lease granted) {
    byte[] value = address.getBytes(StandardCharsets.UTF_8);
    if (!coordinator.kv().putIfAbsent(coordinator.keys().ps(index), value, granted)) {
      revokeQuietly(granted);
      log.info(
          "index {} still owns slots or blocks that a shrink to {} pservers moves away, and {} is"
              + " held (by an earlier lease?): waiting for it",
          index,
          desired,
          coordinator.keys().ps(index));
      return Optional.empty();
    }
    log.info(
        "index {} is at or above {} = {} but still owns slots or blocks in the placement:"
            + " claiming it back",
        index,
        coordinator.keys().psDesired(),
        desired);
    return Optional.of(serve(index, desired, granted));
  }

  /**
   * With replicas: takes the place {@link ShardClaims#claim} gives, {@code preferred} first (the
   * primary of the shard that waits for this pserver's log, else of a vacant shard when nothing may
   * be lost by it, else the backup of a shard that has none); empty while there is none to take.
   */
  private Optional<Integer> registerReplicated(int desired, int preferred, Lease granted) {
    List<Integer> order = new ArrayList<>();
    if (preferred >= 0 && preferred < desired) {
      order.add(preferred);
    }
    for (int i = 0; i < desired; i++) {
      if (i != preferred) {
        order.add(i);
      }
    }
    Optional<ShardClaims.Claim> claim =
        replication.claims().claim(order, address.getBytes(StandardCharsets.UTF_8), granted);
    if (claim.isEmpty()) {
      revokeQuietly(granted);
      return Optional.empty();
    }
    int i = claim.get().index();
    lease = granted;
    if (claim.get().primary()) {
      replication.stop();
      onClaimed(i);
      placement.follow(desired);
      replication.becomePrimary(i, granted);
      if (registered(granted)) {
        log.info(
            "registered as the primary of shard {} ({}) under lease {}", i, address, granted.id());
      }
    } else {
      replication.becomeBackup(i, address, granted, this::onPromoted);
      if (registered(granted)) {
        log.info(
            "registered as the backup of shard {} ({}) under lease {}", i, address, granted.id());
      }
    }
    return Optional.of(i);
  }

  /**
   * The registration under {@code granted} is done: from now on the lease's loss registers again.
   * The listener is added only now: a loss while the state was still REGISTERING would be ignored
   * by {@link #onLeaseLost} (a 1-hour soak found a backup whose lease was lost while it set up its
   * copy: it stayed registered under the dead lease, invisible to its primary, for good); a lease
   * lost before this call runs the listener at once.
   */
  private boolean registered(Lease granted) {
    if (!moveTo(RegistrationState.REGISTERED)) {
      return false;
    }
    granted.onLost(this::onLeaseLost);
    return true;
  }

  private void onPromoted(int shardIndex) {
    // the lifecycle carries the index from the takeover on
    log.debug("pserver {} ({}) took over shard {}", lifecycle.index(), address, shardIndex);
  }

  /**
   * The shard's role ended without a new one (a backup reported another primary, or a takeover
   * failed and gave the index back): register again.
   */
  private void onRoleLost() {
    Lease l = lease;
    if (moveTo(RegistrationState.REGISTERING)) {
      log.warn(
          "pserver {} ({}) lost its part in shard {}: registering again",
          lifecycle.index(),
          address,
          lifecycle.lastShard());
      revokeQuietly(l);
      worker.execute(this::register);
    }
  }

  /** Writes ps_desired when absent and returns the value in force. */
  private int ensureDesired() {
    KeyValueStore kv = coordinator.kv();
    String key = coordinator.keys().psDesired();
    byte[] mine = Integer.toString(properties.desired()).getBytes(StandardCharsets.UTF_8);
    if (kv.compareAndSwap(key, 0, mine)) {
      log.info("wrote {} = {}", key, properties.desired());
      return properties.desired();
    }
    String stored =
        kv.get(key)
            .map(KeyValueStore.KeyValue::valueAsString)
            .orElse(Integer.toString(properties.desired()));
    try {
      int n = Integer.parseInt(stored.trim());
      if (n != properties.desired()) {
        log.info(
            "{} is {} in etcd (configured {}): the stored value wins",
            key,
            n,
            properties.desired());
      }
      return n;
    } catch (NumberFormatException e) {
      throw new CoordinationException(key + " holds '" + stored + "', not a number of pservers");
    }
  }

  /** Asks the lifecycle for the claim and loads the index's state if it changes. */
  private void onClaimed(int claimed) {
    int previous = lifecycle.index();
    if (lifecycle.claimed(claimed)) {
      if (previous >= 0 && previous != claimed) {
        log.warn(
            "claimed index {} instead of the previous {}: loading the state of {}",
            claimed,
            previous,
            claimed);
      }
      ShardPersistence p = persistence.getIfAvailable();
      if (p != null) {
        p.load(claimed);
      } else {
        shard.reset();
      }
    }
  }

  private void onLeaseLost() {
    // First of all: stop answering, another pserver may own the index by now (a primary paused
    // past its TTL resumes here with pushes queued on its socket).
    int index = lifecycle.index();
    lifecycle.leaseLost(
        "pserver "
            + index
            + " lost its etcd lease: it is not the shard's owner any more; find the shard's primary"
            + " in etcd and retry");
    if (moveTo(RegistrationState.REGISTERING)) {
      replication.stop();
      log.warn("lease of pserver {} ({}) was lost: claiming an index again", index, address);
      worker.execute(this::register);
    }
  }

  private static void revokeQuietly(Lease l) {
    if (l != null) {
      try {
        l.revoke();
      } catch (RuntimeException e) {
        log.debug("revoking lease failed: {}", e.toString());
      }
    }
  }

  @Override
  public void start() {
    running = true;
  }

  /**
   * At the very start of a shutdown: readiness goes down, new pushes and pulls fail with
   * UNAVAILABLE (trainers retry elsewhere), pushes in flight finish, and pushes waiting at a
   * synchronous barrier are released with an error instead of holding up the gRPC server's drain.
   */
  @EventListener(ContextClosedEvent.class)
  public void onContextClosed() {
    moveTo(RegistrationState.DRAINING);
    lifecycle.drain();
  }

  /**
   * Runs after the gRPC server stopped taking calls and the final checkpoint was written (phase
   * {@link LifecyclePhases#REGISTRATION}): revokes the lease so trainers see this pserver gone at
   * once.
   */
  @Override
  public void stop() {
    moveTo(RegistrationState.DRAINING);
    worker.shutdownNow();
    try {
      worker.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    lifecycle.drain();
    replication.close();
    revokeQuietly(lease);
    moveTo(RegistrationState.STOPPED);
    lifecycle.stopped();
    running = false;
    log.info("pserver {} deregistered", lifecycle.index());
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return LifecyclePhases.REGISTRATION;
  }

  public RegistrationState state() {
    return state;
  }

  /**
   * The index this pserver serves (or, deposed, served last), or -1: none, or still loading it (the
   * lifecycle's {@link ShardLifecycle#loadedIndex}).
   */
  public int index() {
    return lifecycle.loadedIndex();
  }

  /** The address published in etcd ({@code host:grpcPort}), or null before the server listens. */
  public String address() {
    return address;
  }
}
