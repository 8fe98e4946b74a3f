package dev.paramserver.trainer.master;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.coordination.LeaderHint;
import dev.paramserver.trainer.coordination.MasterLocator;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the leading master, found by the trainer's {@link MasterLocator} (in etcd, {@code
 * master/addr}; or among the configured masters). This is the one layer that retries master calls:
 * every master call is safe to repeat (GetTask re-dispatch is covered by task timeouts; finish and
 * fail reports carry the dispatch epoch; SetDataset and ReportEvaluation are idempotent). A call
 * retries, with bounded backoff and a log line per attempt, while the master is unreachable or not
 * the leader, and gives up only when the trainer stops.
 */
public final class MasterClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(MasterClient.class);

  private final MasterLocator masters;
  private final Duration rpcTimeout;
  private final Retry retry;
  private final ChannelFactory channels;
  private final Object lock = new Object();
  private String address;
  private ManagedChannel channel;

  /**
   * @param masters where the leading master is
   * @param rpcTimeout the deadline of each call
   * @param retry how calls are retried while the master is unavailable or not the leader
   * @param channels builds the channel to the master
   */
  public MasterClient(
      MasterLocator masters, Duration rpcTimeout, Retry retry, ChannelFactory channels) {
    this.masters = masters;
    this.rpcTimeout = rpcTimeout;
    this.retry = retry;
    this.channels = channels;
  }

  /** The address of the master in use, if connected. */
  public Optional<String> address() {
    synchronized (lock) {
      return Optional.ofNullable(address);
    }
  }

  /**
   * Runs a call against the leader with a deadline, retrying while the master is unavailable or not
   * the leader. Other errors are thrown.
   *
   * @throws StoppedException when the trainer stops before the call succeeded
   */
  public <T> T call(String what, Function<MasterGrpc.MasterBlockingStub, T> fn) {
    return retry.until(what, attempt -> attempt(what, fn, attempt));
  }

  /**
   * Makes one attempt of a call, without retrying and whether or not the trainer stops: for the
   * last words of a stopping trainer (handing its task back).
   *
   * @return whether the call succeeded
   */
  public boolean callOnce(String what, Function<MasterGrpc.MasterBlockingStub, ?> fn) {
    return attempt(what, fn, 1).isPresent();
  }

  private <T> Optional<T> attempt(
      String what, Function<MasterGrpc.MasterBlockingStub, T> fn, int attempt) {
    MasterGrpc.MasterBlockingStub stub = stub();
    if (stub == null) {
      if (attempt % 10 == 1) {
        log.info("waiting for a master {}", masters.describe());
      }
      return Optional.empty();
    }
    try {
      return Optional.of(
          fn.apply(stub.withDeadlineAfter(rpcTimeout.toMillis(), TimeUnit.MILLISECONDS)));
    } catch (StatusRuntimeException e) {
      boolean notLeader = RpcErrors.reasonOf(e) == ErrorReason.NOT_LEADER;
      if (!notLeader && !RpcErrors.isTransient(e)) {
        throw e;
      }
      log.warn(
          "{} failed at master {} ({}); finding the leader again, attempt {}",
          what,
          address().orElse("?"),
          e.getStatus().getCode() + (notLeader ? " not the leader" : ""),
          attempt);
      invalidate(notLeader ? LeaderHint.of(e) : null);
      return Optional.empty();
    }
  }

  private MasterGrpc.MasterBlockingStub stub() {
    synchronized (lock) {
      if (channel == null) {
        String addr = masters.current().orElse(null);
        if (addr == null) {
          return null;
        }
        address = addr;
        channel = channels.forAddress(addr);
        log.info("connected to master {}", addr);
      }
      return MasterGrpc.newBlockingStub(channel);
    }
  }

  private void invalidate(String leaderHint) {
    ManagedChannel old;
    String failed;
    synchronized (lock) {
      old = channel;
      failed = address;
      channel = null;
      address = null;
    }
    if (failed != null) {
      masters.failed(failed, leaderHint);
    }
    if (old != null) {
      old.shutdownNow();
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      Channels.close(channel);
      channel = null;
    }
  }
}
