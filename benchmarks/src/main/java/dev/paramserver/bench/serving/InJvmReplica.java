package dev.paramserver.bench.serving;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.JobToken;
import dev.paramserver.serving.grpc.GrpcFollowSource;
import dev.paramserver.serving.replica.Lookups;
import dev.paramserver.serving.replica.ModelDescription;
import dev.paramserver.serving.replica.Predictions;
import dev.paramserver.serving.replica.ServedModel;
import dev.paramserver.serving.replica.ServedVersion;
import dev.paramserver.serving.replica.ServingReplica;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The baseline of the serving section: the serving-service's own replica ({@link ServingReplica},
 * {@link Lookups}) following the job's pserver from inside the bench's JVM, so that its lookups
 * cost what the replica process does for them without gRPC, the network and another process.
 */
final class InJvmReplica implements AutoCloseable {
  private final EtcdCoordinator coordinator;
  private final ServingReplica replica;
  private final Lookups lookups;
  private final Predictions predictions;

  private InJvmReplica(
      EtcdCoordinator coordinator,
      ServingReplica replica,
      Lookups lookups,
      Predictions predictions) {
    this.coordinator = coordinator;
    this.replica = replica;
    this.lookups = lookups;
    this.predictions = predictions;
  }

  /** Predictions on this replica, with the job's model description from etcd. */
  Predictions predictions() {
    return predictions;
  }

  /**
   * A replica of the job's single shard, following it from now on with the job's token (the
   * pserver's ShardFollow is internal).
   */
  static InJvmReplica follow(String etcdEndpoint, String job, String token) {
    EtcdCoordinator coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcdEndpoint, job));
    ServedModel model = new ServedModel("bench-in-jvm", 1);
    ServingReplica replica =
        new ServingReplica(
            model,
            new GrpcFollowSource(
                coordinator,
                ChannelFactory.plaintext().withInterceptors(List.of(JobToken.attach(token))),
                Duration.ofMinutes(10)),
            job,
            Duration.ofMillis(100),
            Duration.ofSeconds(2),
            System::currentTimeMillis);
    replica.start();
    return new InJvmReplica(
        coordinator,
        replica,
        new Lookups(model, 10_000, Duration.ofSeconds(2)),
        new Predictions(
            model,
            new ModelDescription(coordinator.kv(), coordinator.keys().modelDescription()),
            4096));
  }

  /** Waits until the replica serves {@code table}. */
  void awaitTable(String table, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try {
        lookups.lookup(table, new long[] {1}, 0, ServedVersion.Minimum.ANY, Duration.ofMillis(100));
        return;
      } catch (ServiceException e) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "the in-JVM replica serves no table '" + table + "' after " + timeout, e);
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
      }
    }
  }

  /** The requests' lookups one after the other on this thread for {@code duration}. */
  OpenLoop.Result lookups(List<LookupRequest> requests, Duration duration) {
    long[][] ids =
        requests.stream()
            .map(r -> r.getIdsList().stream().mapToLong(Long::longValue).toArray())
            .toArray(long[][]::new);
    String table = requests.get(0).getTable();
    int width = requests.get(0).getWidth();
    return Predicts.closedLoop(
        duration,
        i ->
            lookups.lookup(
                table, ids[i % ids.length], width, ServedVersion.Minimum.ANY, Duration.ZERO));
  }

  @Override
  public void close() {
    replica.stop();
    coordinator.close();
  }
}
