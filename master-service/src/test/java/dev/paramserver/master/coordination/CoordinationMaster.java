package dev.paramserver.master.coordination;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.master.MasterContexts;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.proto.v1.AttendRequest;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.CoordinationGrpc;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Real master contexts (Spring, gRPC on loopback) for one job on the test etcd, with a lease TTL of
 * 2 s, channels to them, and a client of that etcd to look at and change the job's keys.
 */
final class CoordinationMaster implements AutoCloseable {
  static final Duration TTL = Duration.ofSeconds(2);
  final String job;
  final EtcdCoordinator etcd;
  private final String endpoint;
  private final MasterContexts masters = new MasterContexts();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<Attendance> attendances = new ArrayList<>();

  CoordinationMaster(EtcdExtension etcdServer) {
    this.endpoint = etcdServer.endpoint();
    this.job = etcdServer.uniqueJob();
    this.etcd = EtcdCoordinator.connect(EtcdSettings.of(endpoint, job));
  }

  /** Starts a master of the job (it leads if it is the first). */
  ConfigurableApplicationContext start() {
    return masters.start(endpoint, job, "--paramserver.etcd.lease-ttl=" + TTL.toSeconds() + "s");
  }

  /** Starts a master and waits until it leads. */
  ConfigurableApplicationContext startLeader() {
    ConfigurableApplicationContext ctx = start();
    MasterElection e = MasterContexts.election(ctx);
    Poll.until(Duration.ofSeconds(30), e::isLeader, "the master to lead");
    return ctx;
  }

  ManagedChannel channel(ConfigurableApplicationContext ctx) {
    ManagedChannel ch = Channels.forAddress(MasterContexts.election(ctx).identity());
    channels.add(ch);
    return ch;
  }

  CoordinationGrpc.CoordinationBlockingStub stub(ConfigurableApplicationContext ctx) {
    return CoordinationGrpc.newBlockingStub(channel(ctx)).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  Optional<KeyValueStore.KeyValue> get(String key) {
    return etcd.kv().get(key);
  }

  void put(String key, String value) {
    etcd.kv().put(key, value.getBytes(StandardCharsets.UTF_8));
  }

  /** Opens an Attend stream naming the trainer; heartbeats only when {@link Attendance#beat()}. */
  Attendance attend(ConfigurableApplicationContext ctx, String trainerId, String session) {
    Attendance a = new Attendance();
    a.requests = CoordinationGrpc.newStub(channel(ctx)).attend(a);
    a.requests.onNext(
        AttendRequest.newBuilder().setTrainerId(trainerId).setSession(session).build());
    attendances.add(a);
    return a;
  }

  /** One Attend stream, as a trainer sees it: the maps it got and how it ended. */
  static final class Attendance implements StreamObserver<ClusterMap> {
    final BlockingQueue<ClusterMap> maps = new LinkedBlockingQueue<>();
    final CompletableFuture<Throwable> ended = new CompletableFuture<>();
    private StreamObserver<AttendRequest> requests;

    @Override
    public void onNext(ClusterMap map) {
      maps.add(map);
    }

    @Override
    public void onError(Throwable t) {
      ended.complete(t);
    }

    @Override
    public void onCompleted() {
      ended.complete(null);
    }

    synchronized void beat() {
      requests.onNext(AttendRequest.getDefaultInstance());
    }

    /** The next map within {@code timeout}, or an assertion error. */
    ClusterMap next(Duration timeout) throws InterruptedException {
      ClusterMap m = maps.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (m == null) {
        throw new AssertionError("no cluster map within " + timeout);
      }
      return m;
    }

    /** The first map after now that satisfies {@code test}. */
    ClusterMap until(java.util.function.Predicate<ClusterMap> test, Duration timeout)
        throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (true) {
        long left = deadline - System.nanoTime();
        ClusterMap m = left <= 0 ? null : maps.poll(left, TimeUnit.NANOSECONDS);
        if (m == null) {
          throw new AssertionError("no matching cluster map within " + timeout);
        }
        if (test.test(m)) {
          return m;
        }
      }
    }

    synchronized void leave() {
      requests.onCompleted();
    }

    synchronized void cancel() {
      requests.onError(new RuntimeException("the trainer is killed"));
    }
  }

  @Override
  public void close() {
    for (Attendance a : attendances) {
      try {
        a.cancel();
      } catch (RuntimeException e) {
        // ended already
      }
    }
    channels.forEach(Channels::close);
    masters.close();
    etcd.close();
  }
}
