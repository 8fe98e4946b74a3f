package dev.paramserver.trainer.pserver;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.models.Parameters;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.StatusRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a failed call to a pserver means, and what the trainer does about it: the pserver lost its
 * state (re-initialise it with this trainer's latest values), it withdrew a synchronous step (go
 * on), it is unreachable (look its address up again); anything else is a bug and is thrown.
 */
public final class PserverFailures {
  private static final Logger log = LoggerFactory.getLogger(PserverFailures.class);

  /** The kinds of failure the trainer survives. */
  public enum Kind {
    /** The pserver has no parameters (restarted without a checkpoint). */
    LOST_STATE,
    /** The pserver withdrew the synchronous step the call belonged to. */
    WITHDRAWN_STEP,
    /** The pserver did not answer (down, restarting, moved, deadline passed). */
    UNREACHABLE,
    /**
     * The pserver is at one of its limits (OVERLOADED, RESOURCE_EXHAUSTED) and did nothing: retry
     * the same request after a backoff of at least its hint, at the same address.
     */
    OVERLOADED
  }

  private final PserverDirectory directory;
  private final ShardInitializer initializer;

  public PserverFailures(PserverDirectory directory, ShardInitializer initializer) {
    this.directory = directory;
    this.initializer = initializer;
  }

  /**
   * The kind of a failure.
   *
   * @throws StatusRuntimeException or IllegalStateException for a failure the trainer does not
   *     survive
   */
  public static Kind classify(int ps, String call, Throwable cause) {
    ErrorReason reason = RpcErrors.reasonOf(cause);
    if (reason == ErrorReason.NOT_INITIALIZED) {
      return Kind.LOST_STATE;
    }
    if (reason == ErrorReason.SYNC_ABORTED) {
      return Kind.WITHDRAWN_STEP;
    }
    if (reason == ErrorReason.OVERLOADED) {
      return Kind.OVERLOADED;
    }
    if (RpcErrors.isTransient(cause)) {
      return Kind.UNREACHABLE;
    }
    throw cause instanceof StatusRuntimeException sre
        ? sre
        : new IllegalStateException(call + " pserver " + ps + " failed", cause);
  }

  /**
   * Acts on a failed call: re-initialises a pserver that lost its state, logs a withdrawn step,
   * forgets the address of an unreachable pserver.
   *
   * @param call what was called, for example "push to"
   * @param action what happens next, for the log
   * @return the kind of failure
   */
  public Kind handle(int ps, Throwable cause, Parameters latest, String call, String action) {
    Kind kind = classify(ps, call, cause);
    switch (kind) {
      case LOST_STATE -> {
        log.warn(
            "pserver {} has no parameters (restarted without a checkpoint?); re-initialising", ps);
        initializer.reinitialise(ps, latest);
      }
      case WITHDRAWN_STEP ->
          log.warn(
              "{} pserver {}: the synchronous step was withdrawn ({})",
              call,
              ps,
              cause.getMessage());
      case UNREACHABLE -> {
        log.warn(
            "{} pserver {} ({}) failed: {}; {}",
            call,
            ps,
            directory.address(ps),
            RpcErrors.codeOf(cause),
            action);
        directory.invalidate(ps);
      }
      case OVERLOADED ->
          log.debug(
              "{} pserver {}: refused at a limit ({}); {} after the hint of {}",
              call,
              ps,
              cause.getMessage(),
              action,
              RpcErrors.retryAfterOf(cause).orElse(java.time.Duration.ZERO));
    }
    return kind;
  }
}
