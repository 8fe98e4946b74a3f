package dev.paramserver.service;

import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Server-side gRPC call latency, as the timer {@code grpc.server.call.duration} (Prometheus: {@code
 * grpc_server_call_duration_seconds_bucket}) tagged {@code grpc.method} (full method name) and
 * {@code grpc.status} (status code name), with the buckets of {@link ClientCallMetrics}: the metric
 * the dashboards and alerts read. The time runs from the call's start on the server to its close,
 * so a stream counts once, for its whole life.
 *
 * <p>{@link ServiceSupportAutoConfiguration} registers it as the outermost global server
 * interceptor, so it sees the status a call really closed with (after error mapping).
 */
public final class ServerCallMetrics implements ServerInterceptor {
  /** Meter name. */
  public static final String CALL_DURATION = "grpc.server.call.duration";

  private static final Duration[] LATENCY_BUCKETS = MetricBuckets.latency();

  private final MeterRegistry registry;
  // built once per method and status: not on every call
  private final Map<Key, Timer> timers = new ConcurrentHashMap<>();

  private record Key(String method, String status) {}

  public ServerCallMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    long start = System.nanoTime();
    String method = call.getMethodDescriptor().getFullMethodName();
    return next.startCall(
        new SimpleForwardingServerCall<>(call) {
          @Override
          public void close(Status status, Metadata trailers) {
            timers
                .computeIfAbsent(
                    new Key(method, status.getCode().name()), ServerCallMetrics.this::timer)
                .record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
            super.close(status, trailers);
          }
        },
        headers);
  }

  private Timer timer(Key k) {
    return Timer.builder(CALL_DURATION)
        .description("Time taken by a call, from its start on the server to its close")
        .tags(Tags.of("grpc.method", k.method(), "grpc.status", k.status()))
        .serviceLevelObjectives(LATENCY_BUCKETS)
        .register(registry);
  }
}
