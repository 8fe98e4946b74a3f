package dev.paramserver.pserver.grpc;

import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.rpc.QueueFull;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.grpc.server.GlobalServerInterceptor;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/**
 * The pserver's admission limits ({@code paramserver.pserver.limits.*}): the call and byte limits
 * in front of every service, and the bounded queue of the blocking executor.
 */
@Configuration(proxyBeanMethods = false)
public class LimitsConfiguration {
  /**
   * The limit name of a full blocking queue (metric tag {@code reason}, ErrorInfo {@code limit}).
   */
  public static final String QUEUE = "queue";

  private static final Logger log = LoggerFactory.getLogger(LimitsConfiguration.class);

  @Bean
  RefusalCounter refusalCounter(MeterRegistry registry) {
    return new RefusalCounter(registry);
  }

  /**
   * Inside the call metrics (which see the refusal's status) and outside the error mapping, so a
   * refused call never reaches a service.
   */
  @Bean
  @GlobalServerInterceptor
  @Order(Ordered.HIGHEST_PRECEDENCE + 10)
  CallLimits callLimits(
      PserverProperties properties,
      RefusalCounter refusals,
      ObjectProvider<ParameterServerGrpcService> services) {
    PserverProperties.Limits limits = properties.limits();
    long heap = Runtime.getRuntime().maxMemory();
    int calls = limits.effectiveMaxCalls(heap);
    long bytes = limits.effectiveMaxQueuedBytes(heap);
    log.info(
        "limits: {} calls in flight, {} MiB of queued requests, {} queued blocking calls",
        calls,
        bytes >> 20,
        limits.blockingQueue());
    return new CallLimits(
        calls,
        bytes,
        limits.retryAfter(),
        refusals,
        message -> services.ifAvailable(s -> s.releaseUnreferenced(message)));
  }

  /**
   * Counts the request bytes each call really received, as they arrive (for {@link CallLimits}).
   */
  @Bean
  ServerBuilderCustomizer<NettyServerBuilder> receivedBytesTracer() {
    return builder -> builder.addStreamTracerFactory(new ReceivedBytes());
  }

  /**
   * Runs calls that may wait (synchronous barriers) off gRPC's threads; at most {@code
   * limits.blocking-queue} wait for a thread, more are refused OVERLOADED.
   */
  @Bean(destroyMethod = "shutdownNow")
  ExecutorService pserverBlockingExecutor(PserverProperties properties, RefusalCounter refusals) {
    AtomicInteger n = new AtomicInteger();
    int capacity = properties.limits().blockingQueue();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            properties.blockingThreads(),
            properties.blockingThreads(),
            30,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(capacity),
            r -> {
              Thread t = new Thread(r, "pserver-blocking-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            (task, executor) -> {
              if (executor.isShutdown()) {
                throw new java.util.concurrent.RejectedExecutionException("stopped");
              }
              refusals.refused(QUEUE);
              throw new QueueFull(
                  "the pserver's blocking executor",
                  capacity,
                  "paramserver.pserver.limits.blocking-queue",
                  properties.limits().retryAfter());
            });
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}
