package dev.paramserver.serving;

import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Retry;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.service.EtcdOptOut;
import dev.paramserver.serving.admin.ServingStatusSource;
import dev.paramserver.serving.grpc.GrpcFollowSource;
import dev.paramserver.serving.grpc.ServingGrpcService;
import dev.paramserver.serving.placement.EtcdPlacementSource;
import dev.paramserver.serving.registration.ReplicaRegistration;
import dev.paramserver.serving.replica.Lookups;
import dev.paramserver.serving.replica.ModelDescription;
import dev.paramserver.serving.replica.Predictions;
import dev.paramserver.serving.replica.ServedModel;
import dev.paramserver.serving.replica.ServingReplica;
import dev.paramserver.serving.snapshot.CheckpointSnapshots;
import dev.paramserver.serving.snapshot.JobCheckpointCatalog;
import dev.paramserver.serving.snapshot.ModelFileSnapshot;
import dev.paramserver.storage.Storage;
import dev.paramserver.tensor.SlotMap;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The serving replica's beans: the model it serves, where it loads and follows it from, and its
 * gRPC service. With {@code paramserver.serving.model} set it serves that file and uses no etcd.
 */
@Configuration(proxyBeanMethods = false)
public class ServingConfiguration {
  static final String FOLLOWS_JOB = "'${paramserver.serving.model:}'.isBlank()";
  static final String SERVES_FILE = "!'${paramserver.serving.model:}'.isBlank()";

  @Bean(destroyMethod = "close")
  Storage servingStorage(ServingStorageProperties storage) {
    return Storage.create(storage.s3(), "paramserver.serving.s3");
  }

  /** Follows the job {@code paramserver.job}: its pservers' streams and job-wide checkpoints. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnExpression(FOLLOWS_JOB)
  static class FollowsJob {
    @Bean
    JobCheckpointCatalog jobCheckpointCatalog(Coordinator coordinator) {
      return new JobCheckpointCatalog(coordinator.kv(), coordinator.keys());
    }

    /**
     * The served model, with as many shards as the job has ({@code ps_desired}, else the shard
     * count of its newest complete job-wide checkpoint; waited for).
     */
    @Bean
    ServedModel servedModel(
        Coordinator coordinator,
        JobCheckpointCatalog catalog,
        PlacementStore placementStore,
        ServingProperties properties) {
      String key = coordinator.keys().psDesired();
      long deadline = System.nanoTime() + properties.shardsTimeout().toNanos();
      int shards =
          Retry.upTo(properties.followBackoffMax(), () -> System.nanoTime() > deadline)
              .until(
                  "waiting for ps_desired or a job-wide checkpoint in etcd (start the job's"
                      + " pservers, or raise paramserver.serving.shards-timeout)",
                  attempt -> {
                    Optional<Integer> desired =
                        coordinator
                            .kv()
                            .get(key)
                            .map(kv -> Integer.parseInt(kv.valueAsString().trim()));
                    return desired.isPresent()
                        ? desired
                        : catalog.newest().map(JobCheckpointCatalog.Complete::shards);
                  });
      // a scaled job: its shards and routing are the committed map's
      Optional<SlotMap> placement = new EtcdPlacementSource(placementStore).committed();
      return new ServedModel(UUID.randomUUID().toString(), shards, placement.orElse(null));
    }

    @Bean
    PlacementStore servingPlacementStore(Coordinator coordinator) {
      return new PlacementStore(coordinator);
    }

    @Bean
    Supplier<ModelFiles.Loaded> modelDescription(Coordinator coordinator) {
      return new ModelDescription(coordinator.kv(), coordinator.keys().modelDescription());
    }

    /** {@code serving/<replica id>} in etcd, under the replica's lease. */
    @Bean
    ReplicaRegistration replicaRegistration(
        Coordinator coordinator,
        ServedModel model,
        ServingStatusSource status,
        AdminAddress adminAddress,
        ServingProperties properties,
        CommonProperties common) {
      return new ReplicaRegistration(
          coordinator,
          coordinator.keys().serving(model.replica()),
          common.advertiseHost(),
          address -> status.record(address, adminAddress.get()),
          properties.registrationInterval(),
          common.etcd().leaseTtl());
    }

    @Bean
    ServingReplica servingReplica(
        ServedModel model,
        Coordinator coordinator,
        JobCheckpointCatalog catalog,
        Storage storage,
        ChannelFactory channels,
        PlacementStore placementStore,
        ServingProperties properties,
        CommonProperties common) {
      return new ServingReplica(
          model,
          new GrpcFollowSource(coordinator, channels, properties.followStreamMax()),
          new CheckpointSnapshots(catalog, storage),
          new EtcdPlacementSource(placementStore),
          common.job(),
          properties.followBackoff(),
          properties.followBackoffMax(),
          System::currentTimeMillis);
    }
  }

  /** Serves the saved model {@code paramserver.serving.model}: no job, no etcd. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnExpression(SERVES_FILE)
  static class ServesFile {
    @Bean
    EtcdOptOut servingEtcdOptOut() {
      return new EtcdOptOut("paramserver.serving.model is set");
    }

    @Bean
    ServedModel servedModel() {
      return new ServedModel(UUID.randomUUID().toString(), 1);
    }

    /** The file's model description (its type, labels, scaling), read once when first asked. */
    @Bean
    Supplier<ModelFiles.Loaded> modelDescription(Storage storage, ServingProperties properties) {
      AtomicReference<ModelFiles.Loaded> read = new AtomicReference<>();
      return () ->
          read.updateAndGet(
              known -> known != null ? known : ModelFileSnapshot.load(storage, properties.model()));
    }

    @Bean
    ServingReplica servingReplica(
        ServedModel model, Storage storage, ServingProperties properties) {
      return new ServingReplica(
          model,
          null,
          new ModelFileSnapshot(storage, properties.model()),
          properties.model(),
          properties.followBackoff(),
          properties.followBackoffMax(),
          System::currentTimeMillis);
    }
  }

  @Bean
  Lookups lookups(ServedModel model, ServingProperties properties) {
    return new Lookups(model, properties.maxIds(), properties.minVersionWait());
  }

  /**
   * Reads that may wait, pulls and predictions: a bounded pool (the threads end when idle). A
   * lookup of a served version runs on gRPC's transport thread ({@code ServingGrpcServerTuning}).
   */
  @Bean(destroyMethod = "shutdownNow")
  ExecutorService servingReadExecutor(ServingProperties properties) {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            properties.readThreads(),
            properties.readThreads(),
            30,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, "serving-read-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  /**
   * Predictions, with the model's description: from etcd ({@code model/description}) when following
   * a job, from the model file when serving one.
   */
  @Bean
  Predictions predictions(
      ServedModel model, Supplier<ModelFiles.Loaded> description, ServingProperties properties) {
    return new Predictions(model, description, properties.maxExamples());
  }

  @Bean
  ServingGrpcService servingGrpcService(
      Lookups lookups,
      Predictions predictions,
      ServingReplica replica,
      ExecutorService servingReadExecutor) {
    return new ServingGrpcService(lookups, predictions, replica, servingReadExecutor);
  }

  /** Starts following once the context is up; stops before the channels close. */
  @Bean
  SmartLifecycle servingReplicaLifecycle(ServingReplica replica) {
    return new SmartLifecycle() {
      @Override
      public void start() {
        replica.start();
      }

      @Override
      public void stop() {
        replica.stop();
      }

      @Override
      public boolean isRunning() {
        return replica.running();
      }
    };
  }
}
