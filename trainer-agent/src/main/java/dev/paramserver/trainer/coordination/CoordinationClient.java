package dev.paramserver.trainer.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.CoordinationGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the leading master's Coordination service. The one layer that retries coordination calls
 * (all safe to repeat: a lock is granted again to its holder, a release of a lock not held does
 * nothing): while the master is unreachable, not the leader (hopping to the leader it names) or has
 * not seen this trainer's Attend stream yet (NOT_JOINED: the stream is being re-established). Other
 * failures are thrown. Every call has the configured deadline.
 */
final class CoordinationClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(CoordinationClient.class);

  private final MasterLocator masters;
  private final ChannelFactory channels;
  private final Duration rpcTimeout;
  private final Retry retry;
  private final Object lock = new Object();
  private String address;
  private ManagedChannel channel;
  private volatile boolean reachable = true;

  CoordinationClient(
      MasterLocator masters, ChannelFactory channels, Duration rpcTimeout, Retry retry) {
    this.masters = masters;
    this.channels = channels;
    this.rpcTimeout = rpcTimeout;
    this.retry = retry;
  }

  /** False after a call found no leading master to answer it, until one does. */
  boolean reachable() {
    return reachable;
  }

  Duration rpcTimeout() {
    return rpcTimeout;
  }

  /**
   * Runs a unary call against the leader, retrying as the class describes.
   *
   * @throws dev.paramserver.rpc.StoppedException when the trainer stops first
   */
  <T> T call(String what, Function<CoordinationGrpc.CoordinationBlockingStub, T> fn) {
    return call(what, retry, fn);
  }

  /** As {@link #call(String, Function)}, giving up when {@code until} does. */
  <T> T call(String what, Retry until, Function<CoordinationGrpc.CoordinationBlockingStub, T> fn) {
    return until.until(what, attempt -> attempt(what, fn, attempt));
  }

  /** One attempt, not retried: for the last words of a leaving trainer. */
  <T> Optional<T> callOnce(String what, Function<CoordinationGrpc.CoordinationBlockingStub, T> fn) {
    return attempt(what, fn, 1);
  }

  private <T> Optional<T> attempt(
      String what, Function<CoordinationGrpc.CoordinationBlockingStub, T> fn, int attempt) {
    Target target = target();
    try {
      T result =
          fn.apply(
              CoordinationGrpc.newBlockingStub(target.channel())
                  .withDeadlineAfter(rpcTimeout.toMillis(), TimeUnit.MILLISECONDS));
      reachable = true;
      return Optional.of(result);
    } catch (StatusRuntimeException e) {
      if (!retryable(e)) {
        reachable = true; // it answered
        throw e;
      }
      reachable = RpcErrors.reasonOf(e) == ErrorReason.NOT_JOINED;
      log.warn(
          "{} failed at master {} ({}); attempt {}", what, target.address(), describe(e), attempt);
      failed(target, e);
      return Optional.empty();
    }
  }

  /** Whether a failed call is worth repeating (at another master, or after a re-join). */
  static boolean retryable(Throwable e) {
    ErrorReason reason = RpcErrors.reasonOf(e);
    return reason == ErrorReason.NOT_LEADER
        || reason == ErrorReason.NOT_JOINED
        || RpcErrors.isTransient(e);
  }

  static String describe(Throwable e) {
    ErrorReason reason = RpcErrors.reasonOf(e);
    return RpcErrors.codeOf(e)
        + (reason == ErrorReason.ERROR_REASON_UNSPECIFIED ? "" : " " + reason);
  }

  /** The master in use and its channel. */
  record Target(String address, ManagedChannel channel) {}

  /** The channel to the master to call now (the leader, as far as known). */
  Target target() {
    synchronized (lock) {
      String want = masters.current().orElseThrow();
      if (channel == null || !want.equals(address)) {
        if (channel != null) {
          channel.shutdownNow(); // calls on it failed already: the master moved
        }
        address = want;
        channel = channels.forAddress(want);
      }
      return new Target(address, channel);
    }
  }

  /**
   * Says a call to {@code target} failed with {@code e}: a master that is unreachable or not the
   * leader is left for the leader it named or the next one (NOT_JOINED keeps the master).
   */
  void failed(Target target, Throwable e) {
    if (RpcErrors.reasonOf(e) == ErrorReason.NOT_JOINED) {
      return;
    }
    masters.failed(
        target.address(),
        RpcErrors.reasonOf(e) == ErrorReason.NOT_LEADER ? LeaderHint.of(e) : null);
  }

  @Override
  public void close() {
    synchronized (lock) {
      Channels.close(channel);
      channel = null;
    }
  }
}
