package dev.paramserver.pserver.replication.harness;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.grpc.SlotMovesGrpcService;
import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.persistence.TestProperties;
import dev.paramserver.pserver.placement.MoveMetrics;
import dev.paramserver.pserver.placement.MoveRequests;
import dev.paramserver.pserver.placement.PlacementFollower;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.role.ShardPersistence;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardMoves;
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
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.support.StaticListableBeanFactory;

/**
 * One elastic pserver of the move simulation ({@link MoveSimulation}), wired as the service wires
 * it but without Spring, sockets or real threads: a real {@link ParameterShard} with its {@link
 * ShardLifecycle}, a {@link CheckpointService} with its write-ahead log on its disk, the real
 * {@link ShardMoves}, {@link PlacementFollower} and {@link MoveRequests} behind the real {@link
 * SlotMovesGrpcService} on an in-process server named after the process, all on one {@link
 * InProcessPserver.Wiring}'s threads and clock. Its calls to other pservers (MoveIn) go through
 * {@code links}. No replication: moves are refused with replicas.
 */
final class MovePserver implements AutoCloseable {
  // unique in the JVM (the in-process server's name, registered in etcd): simulations run at once
  private static final java.util.concurrent.atomic.AtomicInteger INSTANCES =
      new java.util.concurrent.atomic.AtomicInteger();

  final String name;
  final String address;
  // the index it claims (paramserver.pserver.index); after a claim, the one it held
  final int preferred;
  final ParameterShard shard;
  final ShardLifecycle lifecycle;
  final CheckpointService checkpoints;
  final PlacementFollower follower;
  private final InMemoryCoordinator etcd;
  private final Path dir;
  private final InProcessGrpc grpc = new InProcessGrpc();
  private final InProcessPserver.Wiring wiring;
  private boolean ownsDir = true;
  private Lease lease;

  /**
   * @param name the process's name (its scheduler node); its address adds a number unique in the
   *     JVM
   * @param links the network of its calls to other pservers
   */
  MovePserver(
      String name,
      int preferred,
      InMemoryCoordinator etcd,
      ClientInterceptor links,
      InProcessPserver.Wiring wiring,
      Path disk,
      Duration moveTimeout) {
    this.name = name;
    this.address = name + "-" + INSTANCES.incrementAndGet();
    this.preferred = preferred;
    this.etcd = etcd;
    this.dir = disk;
    this.wiring = wiring;
    PserverProperties properties = properties(disk, moveTimeout);
    this.shard = new ParameterShard(true, SparseSettings.unlimited(), wiring.clock()::nanoTime);
    this.lifecycle = new ShardLifecycle(shard);
    this.checkpoints = new CheckpointService(shard, etcd, properties);
    SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    MoveMetrics moveMetrics = new MoveMetrics(metrics);
    ShardMoves moves = new ShardMoves(shard);
    this.follower = new PlacementFollower(etcd, moves, lifecycle, moveMetrics, wiring.clock());
    ObjectProvider<ShardPersistence> persistence =
        new StaticListableBeanFactory(Map.of("cs", checkpoints))
            .getBeanProvider(ShardPersistence.class);
    MoveRequests requests =
        new MoveRequests(
            shard,
            moves,
            follower,
            etcd,
            properties,
            moveMetrics,
            persistence,
            wiring.blocking(),
            new Channels(links, wiring),
            wiring.clock());
    grpc.startServer(
        address,
        b ->
            b.executor(wiring.transport())
                .scheduledExecutorService(wiring.timer())
                .addService(new SlotMovesGrpcService(requests, wiring.blocking())));
  }

  /** A new process on this (crashed) one's disk: its checkpoints and write-ahead log. */
  MovePserver restartOnSameDisk(
      String newName, ClientInterceptor links, InProcessPserver.Wiring on, Duration moveTimeout) {
    ownsDir = false;
    return new MovePserver(newName, preferred, etcd, links, on, dir, moveTimeout);
  }

  /**
   * Claims {@code ps/<preferred>} and serves it, as ShardRegistration does without replicas for a
   * pserver whose index is set (or that held one before): the rows are routed among {@code
   * desired}, the index is claimed under a new lease, the state loaded when the claim changes it,
   * the placement followed (a move of an earlier claim is rolled back), then the shard serves.
   * (ShardRegistration claims the lowest free index when its own is taken and not placed; here
   * every index is its process's, so an attempt while the index is held fails and is retried.)
   *
   * @return false when the index is held (by this pserver's earlier lease): try again later
   */
  boolean register(int desired) {
    lifecycle.routeRowsAmong(desired);
    Lease granted = etcd.grantLease(Duration.ofSeconds(30));
    int last = lifecycle.lastShard();
    int index = last >= 0 ? last : preferred;
    byte[] value = address.getBytes(StandardCharsets.UTF_8);
    if (!etcd.kv().putIfAbsent(etcd.keys().ps(index), value, granted)) {
      granted.revoke();
      return false;
    }
    lease = granted;
    try {
      if (lifecycle.claimed(index)) {
        checkpoints.load(index);
      }
      follower.follow(desired);
      lifecycle.serve();
      return true;
    } catch (RuntimeException e) {
      lifecycle.claimFailed(e.toString());
      granted.revoke();
      lease = null;
      throw e;
    }
  }

  /** This pserver's lease (null before it registered). */
  Lease lease() {
    return lease;
  }

  /**
   * The lease was found lost (a pause past its TTL): as ShardRegistration's onLeaseLost, the shard
   * stops answering at once; the caller registers it again.
   */
  void leaseLost() {
    lifecycle.leaseLost("pserver " + lifecycle.index() + " lost its etcd lease (simulation)");
  }

  /** Whether {@code ps/<index>} names this process. */
  boolean holds(int index) {
    return etcd.kv()
        .get(etcd.keys().ps(index))
        .map(KeyValueStore.KeyValue::valueAsString)
        .map(address::equals)
        .orElse(false);
  }

  /** {@code kill -9}: the server stops answering; nothing else of this process runs again. */
  void crashKeepingDisk() {
    grpc.shutdownNow();
  }

  @Override
  public void close() {
    try {
      grpc.shutdownNow();
      checkpoints.stop();
      WriteAheadLog wal = checkpoints.wal();
      if (wal != null) {
        wal.close();
      }
      wiring.transport().shutdownNow();
      wiring.blocking().shutdownNow();
    } finally {
      if (ownsDir) {
        TempDirs.deleteRecursively(dir);
      }
    }
  }

  /** Log and checkpoints in {@code dir}, no timer, one copy of each shard. */
  private static PserverProperties properties(Path dir, Duration moveTimeout) {
    PserverProperties p =
        TestProperties.of(
            dir.resolve("checkpoints").toString(),
            Duration.ZERO,
            new PserverProperties.Wal(
                true, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(50), dir.resolve("wal")),
            PserverProperties.CheckpointConsistency.INDEPENDENT,
            1,
            Duration.ofSeconds(1));
    if (!p.moveTimeout().equals(moveTimeout)) {
      throw new IllegalArgumentException(
          "the test properties' move-timeout is " + p.moveTimeout() + ", not " + moveTimeout);
    }
    return p;
  }

  /** Channels to in-process servers by name, through the simulated links, on simulated threads. */
  private static final class Channels extends ChannelFactory {
    private final ClientInterceptor links;
    private final InProcessPserver.Wiring wiring;

    Channels(ClientInterceptor links, InProcessPserver.Wiring wiring) {
      super(null, List.of());
      this.links = links;
      this.wiring = wiring;
    }

    @Override
    public ManagedChannel forAddress(String name) {
      return InProcessChannelBuilder.forName(name)
          .intercept(links instanceof MoveLinks.From f ? f.to(name) : links)
          .executor(wiring.calls())
          .scheduledExecutorService(wiring.timer())
          .build();
    }
  }
}
