package dev.paramserver.etcd;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lease kept alive by our own periodic keep-alive (every TTL/3, each bounded by a timeout), so
 * that a lost etcd is noticed: the lease counts as lost when no keep-alive succeeded for a whole
 * TTL (measured from when the last successful keep-alive was sent, so we never believe in a lease
 * that etcd already expired), or at once when etcd answers that the lease is gone.
 */
final class EtcdLease implements Lease {
  private static final Logger log = LoggerFactory.getLogger(EtcdLease.class);
  private static final Duration REVOKE_AFTER_LOSS_LIMIT = Duration.ofMinutes(10);

  enum State {
    ALIVE,
    REVOKED,
    LOST
  }

  /** The etcd client whose lease service grants, keeps and revokes this lease. */
  private final Client etcd;

  private final EtcdCalls calls;
  private final long id;
  private final Duration ttl;
  private final ScheduledExecutorService scheduler;
  private final Executor listenerExecutor;
  private final AtomicReference<State> state = new AtomicReference<>(State.ALIVE);
  private final AtomicBoolean inFlight = new AtomicBoolean();
  private final List<Runnable> listeners = new ArrayList<>();
  private final long ttlNanos;
  private final long keepAliveEveryNanos;
  private final long keepAliveTimeoutMillis;
  private volatile long lastSuccessSentNanos;
  private volatile long lastSentNanos;
  private volatile ScheduledFuture<?> task;

  private EtcdLease(
      Client etcd,
      EtcdCalls calls,
      long id,
      Duration ttl,
      long grantSentNanos,
      ScheduledExecutorService scheduler,
      Executor listenerExecutor) {
    this.etcd = etcd;
    this.calls = calls;
    this.id = id;
    this.ttl = ttl;
    this.scheduler = scheduler;
    this.listenerExecutor = listenerExecutor;
    this.ttlNanos = ttl.toNanos();
    this.keepAliveEveryNanos = ttlNanos / 3;
    this.keepAliveTimeoutMillis =
        Math.max(100, Math.min(calls.timeout().toMillis(), ttl.toMillis() / 3));
    this.lastSuccessSentNanos = grantSentNanos;
    this.lastSentNanos = grantSentNanos;
  }

  /** Grants a lease of at least {@code ttl} (etcd counts whole seconds) and starts keeping it. */
  static EtcdLease grant(
      Client etcd,
      EtcdCalls calls,
      Duration ttl,
      ScheduledExecutorService scheduler,
      Executor listenerExecutor) {
    if (ttl == null || ttl.compareTo(Duration.ofSeconds(1)) < 0) {
      throw new IllegalArgumentException("lease TTL must be at least 1s, got " + ttl);
    }
    long seconds = (ttl.toMillis() + 999) / 1000;
    long sent = System.nanoTime();
    var granted =
        calls.await(etcd.getLeaseClient().grant(seconds), "lease grant (ttl " + seconds + "s)");
    EtcdLease lease =
        new EtcdLease(
            etcd,
            calls,
            granted.getID(),
            Duration.ofSeconds(granted.getTTL()),
            sent,
            scheduler,
            listenerExecutor);
    lease.start();
    log.debug("granted lease {} ttl {}", Long.toHexString(lease.id), lease.ttl);
    return lease;
  }

  private void start() {
    long period = Math.max(100, Math.min(1000, ttl.toMillis() / 6));
    task = scheduler.scheduleWithFixedDelay(this::tick, period, period, TimeUnit.MILLISECONDS);
  }

  private void tick() {
    if (state.get() != State.ALIVE) {
      return;
    }
    long now = System.nanoTime();
    if (now - lastSuccessSentNanos >= ttlNanos) {
      markLost("no successful keep-alive for " + ttl + " (etcd unreachable?)");
      return;
    }
    if (now - lastSentNanos < keepAliveEveryNanos || !inFlight.compareAndSet(false, true)) {
      return;
    }
    lastSentNanos = now;
    try {
      etcd.getLeaseClient()
          .keepAliveOnce(id)
          .orTimeout(keepAliveTimeoutMillis, TimeUnit.MILLISECONDS)
          .whenComplete((response, error) -> onKeepAlive(now, response, error));
    } catch (RuntimeException e) {
      inFlight.set(false);
      log.debug("keep-alive of lease {} could not be sent: {}", Long.toHexString(id), e.toString());
    }
  }

  private void onKeepAlive(long sentNanos, LeaseKeepAliveResponse response, Throwable error) {
    inFlight.set(false);
    if (error == null) {
      if (response.getTTL() <= 0) {
        markLost("etcd says the lease has expired");
      } else {
        lastSuccessSentNanos = Math.max(lastSuccessSentNanos, sentNanos);
        calls.markConnected(true, null);
      }
    } else if (EtcdCalls.isNotFound(error)) {
      calls.markConnected(true, null);
      markLost("etcd no longer knows the lease (expired)");
    } else {
      calls.markConnected(false, "lease keep-alive failed: " + error);
      log.debug("keep-alive of lease {} failed: {}", Long.toHexString(id), error.toString());
    }
  }

  private void markLost(String why) {
    if (!state.compareAndSet(State.ALIVE, State.LOST)) {
      return;
    }
    cancelTask();
    log.warn("lease {} lost: {}", Long.toHexString(id), why);
    List<Runnable> toRun;
    synchronized (listeners) {
      toRun = List.copyOf(listeners);
      listeners.clear();
    }
    toRun.forEach(this::runListener);
    revokeAfterLoss(System.nanoTime());
  }

  /**
   * etcd may still hold a lease we count as lost (it was only unreachable, or it restarts with its
   * data and extends every lease by its TTL). Keep trying to revoke it, every second for up to
   * {@link #REVOKE_AFTER_LOSS_LIMIT}, so that its keys vanish as soon as etcd answers and a
   * restarted holder can take them again at once.
   */
  private void revokeAfterLoss(long sinceNanos) {
    CompletableFuture<?> attempt;
    try {
      attempt =
          etcd.getLeaseClient()
              .revoke(id)
              .orTimeout(calls.timeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) {
      return; // client closed
    }
    attempt.whenComplete(
        (r, e) -> {
          if (e == null || EtcdCalls.isNotFound(e)) {
            log.info("lost lease {} is gone from etcd", Long.toHexString(id));
          } else if (System.nanoTime() - sinceNanos < REVOKE_AFTER_LOSS_LIMIT.toNanos()) {
            try {
              scheduler.schedule(() -> revokeAfterLoss(sinceNanos), 1, TimeUnit.SECONDS);
            } catch (RejectedExecutionException closed) {
              // the coordinator is closed: etcd expires the lease by its TTL
            }
          }
        });
  }

  private void runListener(Runnable listener) {
    listenerExecutor.execute(
        () -> {
          try {
            listener.run();
          } catch (RuntimeException e) {
            log.warn("onLost listener of lease {} failed", Long.toHexString(id), e);
          }
        });
  }

  @Override
  public long id() {
    return id;
  }

  @Override
  public Duration ttl() {
    return ttl;
  }

  @Override
  public boolean isAlive() {
    return state.get() == State.ALIVE && System.nanoTime() - lastSuccessSentNanos < ttlNanos;
  }

  State state() {
    return state.get();
  }

  @Override
  public void onLost(Runnable listener) {
    synchronized (listeners) {
      if (state.get() != State.LOST) {
        listeners.add(listener);
        return;
      }
    }
    runListener(listener);
  }

  /**
   * Revokes the lease (its keys vanish at once). Idempotent; does not fire the lost listeners. If
   * etcd cannot be reached within the call timeout the failure is logged, not thrown: the lease
   * then ends by its TTL.
   */
  @Override
  public void revoke() {
    revokeAsync().join();
  }

  /** {@link #revoke()} without waiting; the future completes (never exceptionally) when done. */
  CompletableFuture<Void> revokeAsync() {
    if (!state.compareAndSet(State.ALIVE, State.REVOKED)) {
      return CompletableFuture.completedFuture(null);
    }
    cancelTask();
    synchronized (listeners) {
      listeners.clear();
    }
    CompletableFuture<?> call;
    try {
      call =
          etcd.getLeaseClient()
              .revoke(id)
              .orTimeout(calls.timeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) {
      call = CompletableFuture.failedFuture(e);
    }
    return call.handle(
        (r, e) -> {
          if (e == null || EtcdCalls.isNotFound(e)) {
            calls.markConnected(true, null);
            log.debug("revoked lease {}", Long.toHexString(id));
          } else {
            if (!EtcdCalls.serverAnswered(e)) {
              calls.markConnected(false, "lease revoke failed: " + e);
            }
            log.warn(
                "could not revoke lease {}; its keys will vanish when its TTL {} runs out: {}",
                Long.toHexString(id),
                ttl,
                e.toString());
          }
          return null;
        });
  }

  private void cancelTask() {
    ScheduledFuture<?> t = task;
    if (t != null) {
      t.cancel(false);
    }
  }

  @Override
  public String toString() {
    return "Lease[" + Long.toHexString(id) + ", ttl=" + ttl + ", " + state.get() + "]";
  }
}
