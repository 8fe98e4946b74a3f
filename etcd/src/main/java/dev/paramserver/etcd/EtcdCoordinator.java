package dev.paramserver.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Coordinator} on etcd through jetcd. Every call waits at most the configured call timeout
 * and fails with a {@link CoordinationException} naming the operation and key.
 *
 * <p>{@link #connect} does not wait for etcd: it builds the client and starts a probe (every 2 s)
 * that keeps {@link #isConnected()} current; use {@link #awaitConnected(Duration)} to wait for the
 * first answer. {@link #close()} revokes the leases granted here that are still alive, stops the
 * watches' reconnection and closes the client.
 */
public final class EtcdCoordinator implements Coordinator {
  private static final Logger log = LoggerFactory.getLogger(EtcdCoordinator.class);
  private static final long PROBE_MILLIS = 2000;
  private static final long CLAIM_POLL_MILLIS = 250;

  private final EtcdSettings settings;
  private final JobKeys keys;
  private final Client client;
  private final EtcdCalls calls;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService listenerExecutor;
  private final EtcdKeyValueStore kv;
  private final Set<EtcdLease> leases = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean probing = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();

  private EtcdCoordinator(EtcdSettings settings, Client client) {
    this.settings = settings;
    this.keys = new JobKeys(settings.job());
    this.client = client;
    this.calls = new EtcdCalls(settings.callTimeout(), settings.endpoints());
    this.scheduler =
        Executors.newSingleThreadScheduledExecutor(daemonThreads("etcd-coordinator-timer"));
    this.listenerExecutor = Executors.newCachedThreadPool(daemonThreads("etcd-lease-lost"));
    this.kv =
        new EtcdKeyValueStore(client.getKVClient(), client.getWatchClient(), calls, scheduler);
  }

  /**
   * Builds the client for the settings and starts probing etcd. Does not wait for etcd to answer.
   *
   * @throws IllegalArgumentException if the settings are invalid (bad job name, bad URL, TLS file)
   */
  public static EtcdCoordinator connect(EtcdSettings settings) {
    Objects.requireNonNull(settings, "settings");
    new JobKeys(settings.job()); // validate the job name before opening anything
    ClientBuilder builder =
        Client.builder()
            .endpoints(settings.endpoints().stream().map(String::trim).toArray(String[]::new))
            .connectTimeout(settings.callTimeout())
            .retryMaxDuration(settings.callTimeout());
    if (settings.user() != null && !settings.user().isEmpty()) {
      builder
          .user(ByteSequence.from(settings.user(), StandardCharsets.UTF_8))
          .password(
              ByteSequence.from(
                  settings.password() == null ? "" : settings.password(), StandardCharsets.UTF_8));
    }
    if (settings.caFile() != null) {
      try {
        builder.sslContext(b -> b.trustManager(settings.caFile().toFile()));
      } catch (SSLException | RuntimeException e) {
        throw new IllegalArgumentException(
            "cannot use etcd CA file " + settings.caFile() + ": " + e.getMessage(), e);
      }
    }
    EtcdCoordinator coordinator = new EtcdCoordinator(settings, builder.build());
    coordinator.startProbe();
    log.info("etcd coordinator for job '{}' using {}", settings.job(), settings);
    return coordinator;
  }

  /**
   * Sets who is told about every etcd request this coordinator waits for (for latency metrics);
   * null for nobody. Takes effect for calls that start afterwards.
   */
  public void setCallObserver(CallObserver observer) {
    calls.observer(observer);
  }

  public EtcdSettings settings() {
    return settings;
  }

  @Override
  public JobKeys keys() {
    return keys;
  }

  @Override
  public KeyValueStore kv() {
    requireOpen();
    return kv;
  }

  @Override
  public Lease grantLease(Duration ttl) {
    requireOpen();
    EtcdLease lease = EtcdLease.grant(client, calls, ttl, scheduler, listenerExecutor);
    leases.add(lease);
    leases.removeIf(l -> l.state() != EtcdLease.State.ALIVE);
    return lease;
  }

  @Override
  public LeaderElection election(String electionKey) {
    requireOpen();
    return new EtcdLeaderElection(kv, electionKey);
  }

  @Override
  public int claimIndex(String prefix, int max, byte[] value, Lease lease, Duration timeout)
      throws InterruptedException {
    return claimIndex(prefix, max, value, lease, timeout, -1);
  }

  @Override
  public int claimIndex(
      String prefix, int max, byte[] value, Lease lease, Duration timeout, int preferred)
      throws InterruptedException {
    requireOpen();
    if (max <= 0) {
      throw new IllegalArgumentException("max must be positive to claim an index, got " + max);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Set<Integer> taken = new HashSet<>();
      for (KeyValueStore.KeyValue k : kv.getPrefix(prefix)) {
        try {
          taken.add(Integer.parseInt(k.key().substring(prefix.length())));
        } catch (NumberFormatException ignored) {
          // not an index key
        }
      }
      if (preferred >= 0
          && preferred < max
          && !taken.contains(preferred)
          && kv.putIfAbsent(prefix + preferred, value, lease)) {
        log.info(
            "claimed {}{} (preferred) under lease {}",
            prefix,
            preferred,
            Long.toHexString(lease.id()));
        return preferred;
      }
      for (int i = 0; i < max; i++) {
        if (!taken.contains(i) && kv.putIfAbsent(prefix + i, value, lease)) {
          log.info("claimed {}{} under lease {}", prefix, i, Long.toHexString(lease.id()));
          return i;
        }
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new CoordinationException(
            "all "
                + max
                + " indices under "
                + prefix
                + " are taken and none was freed within "
                + timeout
                + ": are more instances running than the "
                + max
                + " wanted?");
      }
      Thread.sleep(Math.max(1, Math.min(CLAIM_POLL_MILLIS, TimeUnit.NANOSECONDS.toMillis(left))));
    }
  }

  @Override
  public boolean isConnected() {
    return !closed.get() && calls.isConnected();
  }

  /**
   * Waits until etcd answered a call or the timeout passed.
   *
   * @return true if connected
   */
  public boolean awaitConnected(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!isConnected()) {
      if (System.nanoTime() >= deadline || closed.get()) {
        return isConnected();
      }
      probe();
      Thread.sleep(100);
    }
    return true;
  }

  private void startProbe() {
    scheduler.scheduleWithFixedDelay(this::probe, 0, PROBE_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** A cheap read (count of one key) whose outcome updates {@link #isConnected()}. */
  private void probe() {
    if (closed.get() || !probing.compareAndSet(false, true)) {
      return;
    }
    try {
      client
          .getKVClient()
          .get(EtcdCalls.bytes(keys.prefix()), GetOption.builder().withCountOnly(true).build())
          .orTimeout(Math.min(calls.timeout().toMillis(), PROBE_MILLIS), TimeUnit.MILLISECONDS)
          .whenComplete(
              (r, e) -> {
                probing.set(false);
                if (e == null || EtcdCalls.serverAnswered(e)) {
                  calls.markConnected(true, null);
                } else {
                  calls.markConnected(false, "probe failed: " + e);
                }
              });
    } catch (RuntimeException e) {
      probing.set(false);
      calls.markConnected(false, "probe failed: " + e);
    }
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    // revoke in parallel: with etcd down, close() then takes one call timeout, not one per lease
    CompletableFuture.allOf(
            leases.stream().map(EtcdLease::revokeAsync).toArray(CompletableFuture[]::new))
        .join();
    leases.clear();
    scheduler.shutdownNow();
    listenerExecutor.shutdown();
    try {
      client.close();
    } catch (RuntimeException e) {
      log.debug("closing the etcd client failed: {}", e.toString());
    }
    log.info("etcd coordinator for job '{}' closed", settings.job());
  }

  private void requireOpen() {
    if (closed.get()) {
      throw new CoordinationException("the etcd coordinator is closed");
    }
  }

  private static ThreadFactory daemonThreads(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
