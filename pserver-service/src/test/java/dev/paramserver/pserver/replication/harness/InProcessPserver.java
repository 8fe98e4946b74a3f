package dev.paramserver.pserver.replication.harness;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.grpc.ShardReplicationGrpcService;
import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.persistence.TestProperties;
import dev.paramserver.pserver.replication.BackupCalls;
import dev.paramserver.pserver.replication.Replication;
import dev.paramserver.pserver.replication.ReplicationClock;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.pserver.wal.WriteAheadLog;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.testsupport.TempDirs;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.support.StaticListableBeanFactory;

/**
 * One pserver of the harness, wired as the service wires it but without Spring, etcd or sockets: a
 * real {@link ParameterShard}, a {@link CheckpointService} with its write-ahead log in a temp
 * directory, {@link Replication} and its gRPC service on an in-process server named after the
 * pserver. Its channels to other pservers pass through {@code network}. Like the Netty transport it
 * serves calls on one thread, in the order they arrive (the service's handlers run on the transport
 * thread and hand waiting work to the blocking executor).
 */
final class InProcessPserver implements AutoCloseable {
  static final int INDEX = 0;
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  final String name;
  final ParameterShard shard;
  final ShardLifecycle lifecycle;
  final CheckpointService checkpoints;
  final Replication replication;
  private final InMemoryCoordinator coordinator;
  private final Path dir;
  // False once a restart on the same disk took the directory over.
  private volatile boolean ownsDir = true;
  private final ExecutorService transport;
  private final ExecutorService blocking;
  private final InProcessGrpc grpc = new InProcessGrpc();
  // On a simulation's threads: nothing runs unless its scheduler runs it, so close does not wait.
  private final boolean simulated;
  private Lease lease;
  private final AtomicInteger promoted = new AtomicInteger(-1);
  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();

  InProcessPserver(
      String name, InMemoryCoordinator coordinator, FaultyNetwork network, Duration timeout) {
    this(name, coordinator, network, timeout, SparseSettings.unlimited(), System::nanoTime);
  }

  /**
   * The threads and clock a harness pserver runs on, when not its own: a simulation's.
   *
   * @param clock the replication's time, waits and threads
   * @param transport runs the gRPC server's calls
   * @param blocking the service's blocking executor
   * @param timer gRPC deadlines, on the simulated clock
   * @param calls runs the answers to this pserver's outgoing calls
   */
  record Wiring(
      ReplicationClock clock,
      ExecutorService transport,
      ExecutorService blocking,
      ScheduledExecutorService timer,
      Executor calls) {}

  /** A pserver on {@code wiring}'s threads and clock, its log and checkpoints in {@code disk}. */
  static InProcessPserver wired(
      String name,
      InMemoryCoordinator coordinator,
      ClientInterceptor network,
      Duration timeout,
      Wiring wiring,
      Path disk) {
    return new InProcessPserver(
        name,
        coordinator,
        network,
        timeout,
        SparseSettings.unlimited(),
        wiring.clock()::nanoTime,
        disk,
        wiring);
  }

  /**
   * @param sparse caps, eviction and admission of the shard's sparse tables
   * @param clock the sparse tables' clock (eviction policies)
   */
  InProcessPserver(
      String name,
      InMemoryCoordinator coordinator,
      FaultyNetwork network,
      Duration timeout,
      SparseSettings sparse,
      LongSupplier clock) {
    this(name, coordinator, network, timeout, sparse, clock, null, null);
  }

  private InProcessPserver(
      String name,
      InMemoryCoordinator coordinator,
      ClientInterceptor network,
      Duration timeout,
      SparseSettings sparse,
      LongSupplier clock,
      Path disk,
      Wiring wiring) {
    // unique in the JVM: a try that timed out may still hold its servers' names
    this.name = name + "-" + INSTANCES.incrementAndGet();
    this.coordinator = coordinator;
    this.simulated = wiring != null;
    this.dir = disk != null ? disk : TempDirs.create("replication-harness-" + this.name);
    PserverProperties properties = properties(dir, timeout);
    this.shard = new ParameterShard(true, sparse, clock);
    this.lifecycle = new ShardLifecycle(shard);
    this.checkpoints = new CheckpointService(shard, coordinator, properties);
    ChannelFactory channels = new InProcessChannels(network, wiring);
    StaticListableBeanFactory beans = new StaticListableBeanFactory(Map.of("cs", checkpoints));
    ObjectProvider<ShardPersistence> persistence = beans.getBeanProvider(ShardPersistence.class);
    this.replication =
        new Replication(
            coordinator,
            shard,
            lifecycle,
            properties,
            persistence,
            channels,
            metrics,
            wiring == null ? ReplicationClock.SYSTEM : wiring.clock());
    this.transport =
        wiring != null
            ? wiring.transport()
            : Executors.newSingleThreadExecutor(r -> daemon(r, this.name + "-transport"));
    this.blocking =
        wiring != null
            ? wiring.blocking()
            : Executors.newFixedThreadPool(8, r -> daemon(r, this.name + "-blocking"));
    grpc.startServer(
        this.name,
        b -> {
          b.executor(transport)
              .addService(new ShardReplicationGrpcService(new BackupCalls(replication), blocking));
          if (wiring != null) {
            b.scheduledExecutorService(wiring.timer());
          }
        });
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  /** Claims {@code ps/0} and serves the shard as its primary (as ShardRegistration does). */
  void registerAsPrimary() {
    lease = coordinator.grantLease(Duration.ofSeconds(30));
    KeyValueStore kv = coordinator.kv();
    if (!kv.putIfAbsent(coordinator.keys().ps(INDEX), address(), lease)) {
      throw new IllegalStateException("ps/" + INDEX + " is taken");
    }
    if (lifecycle.claimed(INDEX)) {
      checkpoints.load(INDEX);
    }
    replication.becomePrimary(INDEX, lease);
  }

  /** Registers as the backup of shard 0; it takes the shard over when {@code ps/0} vanishes. */
  void registerAsBackup() {
    lease = coordinator.grantLease(Duration.ofSeconds(30));
    if (!coordinator.kv().putIfAbsent(coordinator.keys().psBackup(INDEX), address(), lease)) {
      throw new IllegalStateException("ps_backup/" + INDEX + " is taken");
    }
    replication.becomeBackup(INDEX, name, lease, promoted::set);
  }

  private byte[] address() {
    return name.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A new process on this (crashed) pserver's disk: its checkpoints and write-ahead log, as after
   * {@code kill -9} and a restart; it registers with {@link #registerAsRegistrationDoes}.
   */
  InProcessPserver restartOnSameDisk(String newName, FaultyNetwork network, Duration timeout) {
    ownsDir = false;
    return new InProcessPserver(
        newName,
        coordinator,
        network,
        timeout,
        SparseSettings.unlimited(),
        System::nanoTime,
        dir,
        null);
  }

  /** As {@link #restartOnSameDisk}, on {@code wiring}'s threads and clock. */
  InProcessPserver restartOnSameDisk(
      String newName, ClientInterceptor network, Duration timeout, Wiring wiring) {
    ownsDir = false;
    return wired(newName, coordinator, network, timeout, wiring, dir);
  }

  /** This pserver's lease (null before it registered). */
  Lease lease() {
    return lease;
  }

  /**
   * Registers as ShardRegistration does with replicas: takes the place {@link
   * dev.paramserver.pserver.replication.ShardClaims#claim} gives in shard 0, primary or backup.
   *
   * @return true when it became the primary
   * @throws IllegalStateException when there is no place to take now (both keys held, or {@code
   *     ps/0}, which waits for this pserver's log, still held); the lease granted is revoked
   */
  boolean registerAsRegistrationDoes() {
    lease = coordinator.grantLease(Duration.ofSeconds(30));
    var claim = replication.claims().claim(List.of(INDEX), address(), lease);
    if (claim.isEmpty()) {
      lease.revoke();
      throw new IllegalStateException("no place in shard " + INDEX + " for " + name + " now");
    }
    if (claim.get().primary()) {
      if (lifecycle.claimed(INDEX)) {
        checkpoints.load(INDEX);
      }
      replication.becomePrimary(INDEX, lease);
      return true;
    }
    replication.becomeBackup(INDEX, name, lease, promoted::set);
    return false;
  }

  /**
   * As the registration does when the replication reports the role lost (deposed, a failed log):
   * this pserver's lease is revoked, so its keys vanish.
   */
  void revokeLeaseWhenRoleLost() {
    replication.onRoleLost(
        () -> {
          if (lease != null) {
            lease.revoke();
          }
        });
  }

  /** Takeovers this backup refused because etcd did not record it in sync (the metric). */
  long takeoversRefused() {
    var counter =
        metrics.find("paramserver.pserver.replication.takeovers.refused").functionCounter();
    return counter == null ? 0 : (long) counter.count();
  }

  /** The process ends at once: its lease ends, its keys vanish, it serves nothing more. */
  void crash() {
    grpc.shutdownNow();
    replication.close();
    if (lease != null) {
      lease.revoke();
    }
  }

  /**
   * {@code kill -9} in a simulation: the server stops answering; nothing else of this process runs
   * (its scheduler runs none of its threads again); its lease ends when etcd expires it.
   */
  void crashKeepingDisk() {
    grpc.shutdownNow();
  }

  /**
   * {@code kill -9} with the disk intact, outside a simulation: the server stops answering, the
   * replication's threads and the log's files are closed, without an etcd write; the lease and its
   * keys stay until etcd expires it ({@link #leaseExpiresWhilePaused}), so a process restarted on
   * this disk meanwhile finds them held.
   */
  void crashWithinLease() {
    grpc.shutdownNow();
    replication.stop();
    WriteAheadLog wal = checkpoints.wal();
    if (wal != null) {
      wal.close();
    }
  }

  /** etcd expires this pserver's lease while it is paused (see InMemoryCoordinator#expire). */
  void leaseExpiresWhilePaused() {
    coordinator.expire(lease);
  }

  /**
   * The pserver resumes after a pause past its lease (see {@link #leaseExpiresWhilePaused}) and
   * does what ShardRegistration does when its lease is lost: a serving shard stops answering, the
   * replication role ends, and it registers again ({@link #registerAsRegistrationDoes}).
   *
   * @return true when it became the primary
   */
  boolean resumeAfterLeaseLoss() {
    lifecycle.leaseLost(name + " lost its lease (harness)");
    replication.stop();
    return registerAsRegistrationDoes();
  }

  /** Pushes this primary answered without its backup's acknowledgement (the metric). */
  long unreplicated() {
    return (long)
        metrics.get("paramserver.pserver.replication.unreplicated").functionCounter().count();
  }

  /** This pserver's part in the replication, as its status reports it. */
  ReplicaRole role() {
    return lifecycle.status().getReplicaRole();
  }

  /** True once this backup took the shard over and serves it. */
  boolean promoted() {
    return promoted.get() == INDEX && lifecycle.role() == ShardRole.PRIMARY;
  }

  /** The whole shard with optimizer state and applied-push records. */
  ShardCheckpoint state() {
    return shard.snapshot();
  }

  /** The directory of this pserver's checkpoints and write-ahead log. */
  Path dir() {
    return dir;
  }

  @Override
  public void close() {
    if (simulated) {
      grpc.shutdownNow();
    } else {
      try {
        grpc.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    replication.close();
    checkpoints.stop();
    WriteAheadLog wal = checkpoints.wal();
    if (wal != null) {
      wal.close();
    }
    if (lease != null) {
      lease.revoke();
    }
    transport.shutdownNow();
    blocking.shutdownNow();
    if (ownsDir) {
      TempDirs.deleteRecursively(dir);
    }
  }

  /** The settings of a harness pserver: log and checkpoints in {@code dir}, no timer. */
  static PserverProperties properties(Path dir, Duration replicationTimeout) {
    return TestProperties.of(
        dir.resolve("checkpoints").toString(),
        Duration.ZERO,
        new PserverProperties.Wal(
            true, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(50), dir.resolve("wal")),
        PserverProperties.CheckpointConsistency.INDEPENDENT,
        2,
        replicationTimeout);
  }

  /** Channels to in-process servers by name, through the harness network. */
  private static final class InProcessChannels extends ChannelFactory {
    private final ClientInterceptor network;
    private final Wiring wiring;

    InProcessChannels(ClientInterceptor network, Wiring wiring) {
      super(null, java.util.List.of());
      this.network = network;
      this.wiring = wiring;
    }

    @Override
    public ManagedChannel forAddress(String name) {
      InProcessChannelBuilder b =
          InProcessChannelBuilder.forName(name)
              .intercept(network instanceof SimulationNetwork s ? s.to(name) : network);
      if (wiring == null) {
        return b.directExecutor().build();
      }
      return b.executor(wiring.calls()).scheduledExecutorService(wiring.timer()).build();
    }
  }
}
