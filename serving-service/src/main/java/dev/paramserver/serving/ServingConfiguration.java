package dev.paramserver.serving;

import dev.paramserver.coordination.Coordinator;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Retry;
import dev.paramserver.service.CommonProperties;
import dev.paramserver.serving.grpc.GrpcFollowSource;
import dev.paramserver.serving.grpc.ServingGrpcService;
import dev.paramserver.serving.replica.Lookups;
import dev.paramserver.serving.replica.ModelDescription;
import dev.paramserver.serving.replica.Predictions;
import dev.paramserver.serving.replica.ServedModel;
import dev.paramserver.serving.replica.ServingReplica;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The serving replica's beans: the model it serves, its followers and its gRPC service. */
@Configuration(proxyBeanMethods = false)
public class ServingConfiguration {

  /** The served model, with as many shards as the job has ({@code ps_desired}, waited for). */
  @Bean
  ServedModel servedModel(Coordinator coordinator, ServingProperties properties) {
    String key = coordinator.keys().psDesired();
    long deadline = System.nanoTime() + properties.shardsTimeout().toNanos();
    int shards =
        Retry.upTo(properties.followBackoffMax(), () -> System.nanoTime() > deadline)
            .until(
                "waiting for ps_desired in etcd (start the job's pservers, or raise"
                    + " paramserver.serving.shards-timeout)",
                attempt ->
                    coordinator
                        .kv()
                        .get(key)
                        .map(kv -> Integer.parseInt(kv.valueAsString().trim())));
    return new ServedModel(UUID.randomUUID().toString(), shards);
  }

  @Bean
  ServingReplica servingReplica(
      ServedModel model,
      Coordinator coordinator,
      ChannelFactory channels,
      ServingProperties properties,
      CommonProperties common) {
    return new ServingReplica(
        model,
        new GrpcFollowSource(coordinator, channels, properties.followStreamMax()),
        common.job(),
        properties.followBackoff(),
        properties.followBackoffMax(),
        System::currentTimeMillis);
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

  /** Predictions, with the model's description from etcd ({@code model/description}). */
  @Bean
  Predictions predictions(
      ServedModel model, Coordinator coordinator, ServingProperties properties) {
    return new Predictions(
        model,
        new ModelDescription(coordinator.kv(), coordinator.keys().modelDescription()),
        properties.maxExamples());
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
