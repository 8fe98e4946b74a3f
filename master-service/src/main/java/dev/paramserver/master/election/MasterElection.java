package dev.paramserver.master.election;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.LeaderElection;
import dev.paramserver.etcd.LeaderElection.Leadership;
import dev.paramserver.etcd.Lease;
import dev.paramserver.master.state.EtcdJobStore;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * This master's part in the leader election (one thread). Once the gRPC server listens ({@link
 * #begin(int)}), it grants a lease, campaigns under {@code master/election} with the value {@code
 * advertiseHost:grpcPort}, and on winning publishes {@code master/addr} under the lease, loads the
 * job and serves. When the lease is lost or a fenced write is refused it stops serving at once and
 * campaigns again with a new lease. On {@link #stop()} it stops serving, resigns and revokes the
 * lease.
 *
 * <p>States: IDLE → CAMPAIGNING → LEADER → STEPPING_DOWN → CAMPAIGNING ...; STOPPED at the end.
 */
public final class MasterElection implements SmartLifecycle {
  /** Where this master is in the election. */
  public enum State {
    /** Not started, or waiting for the gRPC server's port. */
    IDLE,
    /** Waiting to become the leader (a standby). */
    CAMPAIGNING,
    /** Leading: serving the job. */
    LEADER,
    /** Leadership lost or given up; not serving. */
    STEPPING_DOWN,
    /** Stopped for good. */
    STOPPED
  }

  private static final Logger log = LoggerFactory.getLogger(MasterElection.class);
  private static final Duration RETRY = Duration.ofSeconds(1);
  private static final Duration CAMPAIGN_ROUND = Duration.ofSeconds(30);

  private final Coordinator coordinator;
  private final MasterJob job;
  private final EtcdJobStore store;
  private final String advertiseHost;
  private final Duration leaseTtl;
  private final int phase;
  private final Object signal = new Object();
  private final AtomicReference<State> state = new AtomicReference<>(State.IDLE);
  private final LeaderAddress leaderAddress;
  private volatile boolean running;
  private volatile boolean lossSignalled;
  private volatile String identity = "";
  private volatile int advertisePort;
  private volatile Thread thread;
  private volatile Lease lease;
  private volatile Leadership leadership;

  public MasterElection(
      Coordinator coordinator,
      MasterJob job,
      EtcdJobStore store,
      String advertiseHost,
      Duration leaseTtl,
      int phase) {
    this.coordinator = coordinator;
    this.job = job;
    this.store = store;
    this.advertiseHost = advertiseHost;
    this.leaseTtl = leaseTtl;
    this.phase = phase;
    this.leaderAddress = new LeaderAddress(coordinator.kv(), coordinator.keys().masterAddr());
    job.setLeaderAddress(leaderAddress::get);
    job.setOnFenceLost(this::signalLoss);
  }

  public State state() {
    return state.get();
  }

  public boolean isLeader() {
    return state.get() == State.LEADER && job.isServing();
  }

  /** {@code advertiseHost:grpcPort} once the gRPC server listens, else empty. */
  public String identity() {
    return identity;
  }

  /** The leader's address as published in etcd, if known. */
  public Optional<String> leaderAddress() {
    return isLeader() ? Optional.of(identity) : leaderAddress.get();
  }

  @Override
  public void start() {
    running = true;
    leaderAddress.start();
  }

  /** Publishes this port instead of the gRPC server's own (0: the server's port). */
  public void setAdvertisePort(int port) {
    this.advertisePort = port;
  }

  /** Starts campaigning: called once the gRPC server listens on {@code grpcPort}. */
  public synchronized void begin(int grpcPort) {
    if (!running || thread != null) {
      return;
    }
    identity = advertiseHost + ":" + (advertisePort > 0 ? advertisePort : grpcPort);
    Thread t = new Thread(this::run, "master-election");
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  @Override
  public void stop() {
    if (!running) {
      return;
    }
    running = false;
    // stop serving first, so no new call is answered while we resign
    job.stopServing();
    transition(State.STEPPING_DOWN);
    // resign and revoke from this thread, so a standby takes over at once (the election thread
    // may be interrupted below, which would cut its etcd calls short)
    giveUp();
    signalLoss();
    Thread t = thread;
    if (t != null) {
      t.interrupt();
      try {
        t.join(leaseTtl.plusSeconds(5).toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    leaderAddress.close();
    transition(State.STOPPED);
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return phase;
  }

  private void run() {
    try {
      new Retry(RETRY, RETRY, () -> !running)
          .until(
              "the master election",
              attempt -> {
                try {
                  while (running) {
                    campaignOnce(); // returns once leadership is lost: campaign again at once
                  }
                  return Optional.of(true);
                } catch (RuntimeException e) {
                  log.warn("master election round failed, retrying in {}: {}", RETRY, e.toString());
                  stepDown();
                  return Optional.empty();
                }
              });
    } catch (StoppedException e) {
      log.debug("master election ends: {}", e.getMessage());
    }
    stepDown();
  }

  private void campaignOnce() throws InterruptedException {
    lossSignalled = false;
    Lease l = coordinator.grantLease(leaseTtl);
    lease = l;
    l.onLost(
        () -> {
          if (lease != l) {
            return; // a lease of an earlier round
          }
          log.warn("master lease {} lost: stepping down", Long.toHexString(l.id()));
          job.stopServing(); // at once, not when the election thread wakes up
          signalLoss();
        });
    transition(State.CAMPAIGNING);
    leaderAddress.start(); // in case etcd was unreachable when this master started
    LeaderElection election = coordinator.election(coordinator.keys().masterElection());
    byte[] value = identity.getBytes(StandardCharsets.UTF_8);
    Optional<Leadership> won = Optional.empty();
    while (running && l.isAlive() && !lossSignalled && won.isEmpty()) {
      won = election.campaign(value, l, CAMPAIGN_ROUND);
    }
    if (won.isEmpty()) {
      stepDown();
      return;
    }
    Leadership lead = won.get();
    leadership = lead;
    store.fence(new EtcdJobStore.Fence(lead.key(), lead.createRevision()));
    // load the job and serve before publishing the address, so trainers that follow
    // master/addr find a leader ready to answer
    job.startServing(identity);
    if (!transition(State.LEADER)) {
      stepDown(); // stopped meanwhile
      return;
    }
    coordinator.kv().put(coordinator.keys().masterAddr(), value, l);
    log.info(
        "this master ({}) leads job '{}' (key {})", identity, coordinator.keys().job(), lead.key());
    synchronized (signal) {
      while (running && l.isAlive() && !lossSignalled) {
        signal.wait(1000);
      }
    }
    if (running) {
      log.warn("this master ({}) lost its leadership; campaigning again", identity);
    }
    stepDown();
  }

  /** Stops serving and lets go of the leadership and lease of this round. */
  private void stepDown() {
    if (state.get() == State.LEADER) {
      transition(State.STEPPING_DOWN);
    }
    job.stopServing();
    store.clearFence();
    giveUp();
  }

  private synchronized void giveUp() {
    Leadership lead = leadership;
    leadership = null;
    if (lead != null) {
      try {
        lead.resign();
      } catch (RuntimeException e) {
        log.debug("resign failed (the lease going will end the leadership anyway)", e);
      }
    }
    Lease l = lease;
    lease = null;
    if (l != null && l.isAlive()) {
      try {
        l.revoke();
      } catch (RuntimeException e) {
        log.debug("revoking the master lease failed (it will expire)", e);
      }
    }
  }

  private void signalLoss() {
    synchronized (signal) {
      lossSignalled = true;
      signal.notifyAll();
    }
  }

  /** Moves to {@code next} if allowed from the current state; STOPPED is final. */
  private boolean transition(State next) {
    while (true) {
      State prev = state.get();
      if (prev == next) {
        return true;
      }
      if (!allowed(prev, next)) {
        log.debug("master election ignores {} -> {}", prev, next);
        return false;
      }
      if (state.compareAndSet(prev, next)) {
        log.debug("master election {} -> {}", prev, next);
        return true;
      }
    }
  }

  static boolean allowed(State from, State to) {
    return switch (from) {
      case IDLE -> to == State.CAMPAIGNING || to == State.STEPPING_DOWN || to == State.STOPPED;
      case CAMPAIGNING -> to == State.LEADER || to == State.STEPPING_DOWN || to == State.STOPPED;
      case LEADER -> to == State.STEPPING_DOWN;
      case STEPPING_DOWN -> to == State.CAMPAIGNING || to == State.STOPPED;
      case STOPPED -> false;
    };
  }
}
