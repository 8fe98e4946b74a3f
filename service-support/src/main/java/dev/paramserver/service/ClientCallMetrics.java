package dev.paramserver.service;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Client-side gRPC call latency, as the timer {@code grpc.client.call.duration} (Prometheus: {@code
 * grpc_client_call_duration_seconds_bucket}) tagged {@code grpc.method} (full method name), {@code
 * grpc.status} (status code name) and {@code grpc.target} (the channel's authority): the same
 * family, tags and buckets as the server side's {@link ServerCallMetrics} ({@code
 * grpc.server.call.duration}), so dashboards treat both sides alike. The time runs from the start
 * of the call to its close, so it includes waiting for a connection and retries.
 *
 * <p>Used for the project's own channels ({@link dev.paramserver.rpc.ChannelFactory}): {@link
 * ServiceSupportAutoConfiguration} registers it as a default interceptor there.
 */
public final class ClientCallMetrics implements ClientInterceptor {
  /** Meter name. */
  public static final String CALL_DURATION = "grpc.client.call.duration";

  private static final Duration[] LATENCY_BUCKETS = MetricBuckets.latency();

  private final MeterRegistry registry;
  // built once per method, status and target: not on every call
  private final Map<Key, Timer> timers = new ConcurrentHashMap<>();

  private record Key(String method, String status, String target) {}

  public ClientCallMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(
      MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    String target = next.authority() == null ? "" : next.authority();
    return new SimpleForwardingClientCall<>(next.newCall(method, options)) {
      @Override
      public void start(Listener<R> listener, Metadata headers) {
        long start = System.nanoTime();
        super.start(
            new SimpleForwardingClientCallListener<>(listener) {
              @Override
              public void onClose(Status status, Metadata trailers) {
                record(method.getFullMethodName(), target, status, System.nanoTime() - start);
                super.onClose(status, trailers);
              }
            },
            headers);
      }
    };
  }

  private void record(String method, String target, Status status, long nanos) {
    timers
        .computeIfAbsent(new Key(method, status.getCode().name(), target), this::timer)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  private Timer timer(Key k) {
    return Timer.builder(CALL_DURATION)
        .description("Time taken by a call, from the client's start of it to its close")
        .tags(
            Tags.of(
                "grpc.method", k.method(), "grpc.status", k.status(), "grpc.target", k.target()))
        .serviceLevelObjectives(LATENCY_BUCKETS)
        .register(registry);
  }
}
