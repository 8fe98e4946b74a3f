package dev.paramserver.service;

import org.springframework.context.SmartLifecycle;

/**
 * {@link SmartLifecycle} phases the services use, so that a graceful shutdown happens in the order
 * docs/design.md §5 describes. Spring starts lower phases first and stops higher phases first. The
 * {@code Coordinator} bean is not a lifecycle bean: it is closed by its destroy method, which
 * Spring runs only after every lifecycle bean has stopped, so any phase may still use etcd in
 * {@code stop()}.
 *
 * <p>Order at shutdown (each phase's {@code stop} waits at most {@code
 * spring.lifecycle.timeout-per-shutdown-phase}, 30 s by default):
 *
 * <ol>
 *   <li>{@code Integer.MAX_VALUE}: the gRPC server (Spring gRPC's lifecycle) stops taking calls and
 *       lets in-flight calls finish ({@code spring.grpc.server.shutdown.grace-period}).
 *   <li>{@code DEFAULT_PHASE - 1024}: the web server's graceful shutdown (HTTP: actuator, admin).
 *   <li>{@link #ROLE}: the role's own work drains and acts on the way out: a master resigns, a
 *       pserver checkpoints, a trainer finishes its batch and hands its task back.
 *   <li>{@link #REGISTRATION}: etcd registrations end: the lease is revoked, so others see this
 *       instance gone at once instead of after the TTL.
 *   <li>{@link #CLIENTS}: outgoing gRPC channels close.
 *   <li>(not a phase) the {@code Coordinator} closes.
 * </ol>
 *
 * At start the order is reversed: channels, then registration (lease), then the role, then the web
 * and gRPC servers. Work that needs the gRPC server's bound port (registering {@code host:port}
 * when {@code spring.grpc.server.port=0}) belongs in a listener for Spring gRPC's {@code
 * GrpcServerStartedEvent} rather than in a lower phase.
 */
public final class LifecyclePhases {
  /** The role's main component (election participant, shard, training loop). */
  public static final int ROLE = SmartLifecycle.DEFAULT_PHASE - 100_000;

  /** Lease keeper and etcd registration. */
  public static final int REGISTRATION = SmartLifecycle.DEFAULT_PHASE - 200_000;

  /** Outgoing channels to other services. */
  public static final int CLIENTS = SmartLifecycle.DEFAULT_PHASE - 300_000;

  private LifecyclePhases() {}
}
